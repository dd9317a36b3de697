/**
 * The EnvoyFilter golden corpus (testdata/scenarios/envoyfilter): a base mesh (base/mesh.yaml),
 * one directory per scenario with an EnvoyFilter file (config/envoyfilter.yaml), and istiod's
 * output captured by scripts/istiod-golden-envoyfilter.ts: base/istiod/<proxy>.json in full, and
 * per scenario only the resources that differ from base (changed or added in full, removed by name).
 */
import { copyFileSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { JsonObject, JsonValue } from '@bufbuild/protobuf';
import { REPO_ROOT } from '../../support/paths.js';
import type { NodeSpec } from '../../support/scenario.js';

export const EF_DIR = join(REPO_ROOT, 'testdata/scenarios/envoyfilter');
export const EF_BASE = join(EF_DIR, 'base');

export const EF_PROXIES: Readonly<Record<string, NodeSpec>> = {
  web: { id: 'sidecar~10.1.0.10~web-1.shop~shop.svc.cluster.local', labels: { app: 'web' } },
  'ingress-gateway': {
    id: 'router~10.2.0.1~istio-ingressgateway-1.istio-system~istio-system.svc.cluster.local',
    labels: { istio: 'ingressgateway', app: 'istio-ingressgateway' },
  },
};

export const SECTIONS = ['listeners', 'routes', 'clusters'] as const;
export type Section = (typeof SECTIONS)[number];

/** One proxy's config as proto3 JSON, by section, each resource by name. */
export type ProxyJson = Record<Section, JsonObject[]>;

/** What a scenario changed against base, per section: resources changed or added (in full), and the names removed. */
export interface ResourceDelta {
  readonly changed: Record<Section, JsonObject[]>;
  readonly removed: Record<Section, string[]>;
}

export const scenarioNames = (): string[] =>
  readdirSync(EF_DIR, { withFileTypes: true })
    .filter((d) => d.isDirectory() && d.name !== 'base')
    .map((d) => d.name)
    .sort();

/** A temporary config directory: the base mesh plus the scenario's EnvoyFilter file (istiod's file mode reads one dir). */
export function scenarioConfigDir(scenario: string | undefined): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), 'ef-scenario-'));
  copyFileSync(join(EF_BASE, 'mesh.yaml'), join(dir, 'mesh.yaml'));
  if (scenario) copyFileSync(join(EF_DIR, scenario, 'config', 'envoyfilter.yaml'), join(dir, 'envoyfilter.yaml'));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

const nameOf = (r: JsonObject): string => String(r.name ?? '');

const canonical = (v: JsonValue | undefined): string =>
  JSON.stringify(v, (_k, x: unknown) =>
    x && typeof x === 'object' && !Array.isArray(x)
      ? Object.fromEntries(Object.entries(x as Record<string, unknown>).sort(([a], [b]) => a.localeCompare(b)))
      : x,
  );

/** The resources of `after` not equal to base (changed or new), and base names gone. */
export function resourceDelta(base: ProxyJson, after: ProxyJson): ResourceDelta {
  const changed = { listeners: [], routes: [], clusters: [] } as Record<Section, JsonObject[]>;
  const removed = { listeners: [], routes: [], clusters: [] } as Record<Section, string[]>;
  for (const s of SECTIONS) {
    const before = new Map(base[s].map((r) => [nameOf(r), canonical(r)]));
    const now = new Set(after[s].map(nameOf));
    for (const r of after[s]) if (before.get(nameOf(r)) !== canonical(r)) changed[s].push(r);
    for (const n of before.keys()) if (!now.has(n)) removed[s].push(n);
  }
  return { changed, removed };
}
