/**
 * Every committed istiod corpus as cases for the whole-resource comparison: for each scenario and
 * proxy, istiod's resources (from the capture) and meshpilot's (generated now), both as proto3 JSON.
 * - bookinfo: every proxy, listeners/routes/clusters/endpoints;
 * - envoyfilter: base and every scenario (istiod's side is base with the scenario's delta applied),
 *   listeners/routes/clusters;
 * - gateway-api: the gateway, listeners/routes/clusters (istiod's capture has no endpoints);
 * - telemetry: every proxy, listeners (all the capture holds);
 * - wasm: every proxy, the HCM filter lists and ECDS resources (all the capture holds);
 * - dns-listeners: sidecars with and without DNS_CAPTURE + DNS_AUTO_ALLOCATE on ServiceEntries
 *   without addresses, listeners, routes and clusters (listeners on auto-allocated addresses); a dual-stack
 *   sidecar also against an istiod with ISTIO_DUAL_STACK=true (scenario dual-stack).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { JsonObject, JsonValue } from '@bufbuild/protobuf';
import { ClusterSchema } from '../../../src/gen/envoy/config/cluster/v3/cluster_pb.js';
import { ClusterLoadAssignmentSchema } from '../../../src/gen/envoy/config/endpoint/v3/endpoint_pb.js';
import { ListenerSchema } from '../../../src/gen/envoy/config/listener/v3/listener_pb.js';
import { RouteConfigurationSchema } from '../../../src/gen/envoy/config/route/v3/route_pb.js';
import { registerEnvoyGenerators } from '../../../src/networking/envoy-generators.js';
import { configCredentials } from '../../../src/networking/gateway/config-credentials.js';
import { silentLogger } from '../../../src/util/log.js';
import { GeneratorRegistry } from '../../../src/xds/generator.js';
import { xdsJsonRegistry } from '../../../src/model/json-registry.js';
import { toOpaqueJson } from '../../support/opaque-json.js';
import { generateFor, loadScenario, type GeneratedConfig, type NodeSpec } from '../../support/scenario.js';
import { nodeFor } from '../../../scripts/istiod-capture.js';
import { parseProxy, type Proxy } from '../../../src/model/proxy.js';
import { PushContext } from '../../../src/model/push-context.js';
import { tempDir } from '../../support/temp-dir.js';
import { BOOKINFO_DIR, BOOKINFO_PROXIES } from '../bookinfo-fixture.js';
import {
  EF_BASE,
  EF_DIR,
  EF_PROXIES,
  scenarioConfigDir,
  scenarioNames as efScenarios,
  SECTIONS,
  type ResourceDelta,
} from '../envoyfilter/envoyfilter-fixture.js';
import { GATEWAY_API_DIR, GATEWAY_PROXY, scenarioNames as gwScenarios, writeMeshpilotConfig } from '../gateway-api-fixture.js';
import { generateTelemetryScenario, TELEMETRY_DIR, TELEMETRY_PROXIES, TELEMETRY_SCENARIOS } from '../telemetry-fixture.js';
import { generateWasmScenario, WASM_DIR, WASM_PROXIES, WASM_SCENARIOS, type WasmView } from '../wasm-fixture.js';
import {
  DNS_LISTENERS_CONFIG_DIR,
  DNS_LISTENERS_DUAL_STACK_ISTIOD_DIR,
  DNS_LISTENERS_DUAL_STACK_PROXIES,
  DNS_LISTENERS_ISTIOD_DIR,
  DNS_LISTENERS_PROXIES,
} from '../dns-listeners-fixture.js';
import type { Resource } from './leaves.js';

export interface Case {
  readonly corpus: string;
  readonly scenario: string;
  readonly proxy: string;
  readonly istiod: Resource[];
  readonly meshpilot: Resource[];
}

/** Section of a capture file → resource type name in the comparison. */
const TYPES = { listeners: 'listener', routes: 'route', clusters: 'cluster', endpoints: 'endpoint' } as const;
type Section = keyof typeof TYPES;
type SectionJson = Partial<Record<Section, readonly JsonValue[]>>;

const nameOf = (v: JsonValue): string => {
  const o = v as JsonObject;
  return String(o.name ?? o.clusterName ?? '');
};

function resources(cfg: SectionJson, sections: readonly Section[]): Resource[] {
  return sections.flatMap((s) => (cfg[s] ?? []).map((json) => ({ type: TYPES[s], name: nameOf(json), json })));
}

const registry = xdsJsonRegistry();
const opaque = new Set<string>();

function meshpilotJson(c: GeneratedConfig): Record<Section, JsonValue[]> {
  const j = (schema: Parameters<typeof toOpaqueJson>[0], ms: readonly unknown[]): JsonValue[] =>
    ms.map((m) => toOpaqueJson(schema, m as never, registry, opaque));
  return {
    listeners: j(ListenerSchema, c.listeners),
    routes: j(RouteConfigurationSchema, c.routes),
    clusters: j(ClusterSchema, c.clusters),
    endpoints: j(ClusterLoadAssignmentSchema, c.endpoints),
  };
}

/** The proxy as the capture's node described it (metadata as pilot-agent sends it), so both sides get the same input. */
function capturedProxy(spec: NodeSpec): Proxy {
  const p = parseProxy(nodeFor(spec));
  if (!p.ok) throw p.errors[0];
  return p.value;
}

const readJson = <T>(file: string): T => JSON.parse(readFileSync(file, 'utf8')) as T;
const generators = (): GeneratorRegistry =>
  registerEnvoyGenerators(new GeneratorRegistry(), { logger: silentLogger, credentials: (p) => configCredentials(p.config, silentLogger) });

async function bookinfo(): Promise<Case[]> {
  const { push } = await loadScenario(join(BOOKINFO_DIR, 'config'));
  const gens = generators();
  return Object.entries(BOOKINFO_PROXIES).map(([proxy, spec]) => ({
    corpus: 'bookinfo',
    scenario: 'bookinfo',
    proxy,
    istiod: resources(readJson<SectionJson>(join(BOOKINFO_DIR, 'istiod', `${proxy}.json`)), [
      'listeners',
      'routes',
      'clusters',
      'endpoints',
    ]),
    meshpilot: resources(meshpilotJson(generateFor(push, gens, capturedProxy(spec))), ['listeners', 'routes', 'clusters', 'endpoints']),
  }));
}

/** istiod's full output for an EnvoyFilter scenario: base, with the scenario's changed resources replaced or added and removed ones dropped. */
function applyDelta(base: SectionJson, delta: ResourceDelta): SectionJson {
  const out: SectionJson = {};
  for (const s of SECTIONS) {
    const changed = new Map(delta.changed[s].map((r) => [nameOf(r), r as JsonValue]));
    const removed = new Set(delta.removed[s]);
    const kept = (base[s] ?? []).filter((r) => !removed.has(nameOf(r))).map((r) => changed.get(nameOf(r)) ?? r);
    const have = new Set(kept.map(nameOf));
    out[s] = [...kept, ...[...changed.values()].filter((r) => !have.has(nameOf(r)))];
  }
  return out;
}

async function envoyfilter(): Promise<Case[]> {
  const out: Case[] = [];
  for (const scenario of [undefined, ...efScenarios()]) {
    const s = scenarioConfigDir(scenario);
    try {
      const { push } = await loadScenario(s.dir);
      const gens = generators();
      for (const [proxy, spec] of Object.entries(EF_PROXIES)) {
        const base = readJson<SectionJson>(join(EF_BASE, 'istiod', `${proxy}.json`));
        const istiod = scenario ? applyDelta(base, readJson<ResourceDelta>(join(EF_DIR, scenario, 'istiod', `${proxy}.json`))) : base;
        const g = generateFor(push, gens, capturedProxy(spec));
        out.push({
          corpus: 'envoyfilter',
          scenario: scenario ?? 'base',
          proxy,
          istiod: resources(istiod, SECTIONS),
          meshpilot: resources(meshpilotJson(g), SECTIONS),
        });
      }
    } finally {
      s.cleanup();
    }
  }
  return out;
}

async function gatewayApi(): Promise<Case[]> {
  const tmp = tempDir('whole-gateway-api');
  const out: Case[] = [];
  const sections = ['listeners', 'routes', 'clusters'] as const;
  for (const scenario of gwScenarios()) {
    const dir = join(tmp.path, scenario);
    writeMeshpilotConfig(scenario, dir);
    const { push } = await loadScenario(dir);
    const g = generateFor(push, generators(), capturedProxy(GATEWAY_PROXY));
    const istiod = readJson<SectionJson>(join(GATEWAY_API_DIR, scenario, 'istiod.json'));
    out.push({
      corpus: 'gateway-api',
      scenario,
      proxy: 'gateway',
      istiod: resources(istiod, sections),
      meshpilot: resources(meshpilotJson(g), sections),
    });
  }
  return out;
}

async function telemetry(): Promise<Case[]> {
  const out: Case[] = [];
  for (const scenario of TELEMETRY_SCENARIOS) {
    const generated = await generateTelemetryScenario(scenario);
    for (const proxy of Object.keys(TELEMETRY_PROXIES)) {
      const istiod = readJson<SectionJson>(join(TELEMETRY_DIR, scenario, 'istiod', `${proxy}.json`));
      out.push({
        corpus: 'telemetry',
        scenario,
        proxy,
        istiod: resources(istiod, ['listeners']),
        meshpilot: resources(meshpilotJson(generated.get(proxy)!), ['listeners']),
      });
    }
  }
  return out;
}

function wasmResources(v: WasmView): Resource[] {
  return [
    ...Object.entries(v.hcms).map(([name, json]): Resource => ({ type: 'hcm', name, json })),
    ...Object.entries(v.ecds).map(([name, json]): Resource => ({ type: 'ecds', name, json })),
  ];
}

async function wasm(): Promise<Case[]> {
  const out: Case[] = [];
  for (const scenario of WASM_SCENARIOS) {
    const golden = readJson<{ proxies: Record<string, WasmView> }>(join(WASM_DIR, 'istiod', `${scenario}.json`));
    const ours = await generateWasmScenario(scenario);
    for (const proxy of Object.keys(WASM_PROXIES)) {
      out.push({
        corpus: 'wasm',
        scenario,
        proxy,
        istiod: wasmResources(golden.proxies[proxy]!),
        meshpilot: wasmResources(ours.get(proxy)!),
      });
    }
  }
  return out;
}

async function dnsListeners(): Promise<Case[]> {
  const { push, store } = await loadScenario(DNS_LISTENERS_CONFIG_DIR);
  // The dual-stack capture's istiod ran with ISTIO_DUAL_STACK=true: so does this push.
  const dualStack = new PushContext({ version: 'scenario', mesh: push.mesh, config: store.snapshot(), dualStack: true });
  const gens = generators();
  const cases = (scenario: string, p: PushContext, dir: string, proxies: Readonly<Record<string, NodeSpec>>): Case[] =>
    Object.entries(proxies).map(([proxy, spec]) => ({
      corpus: 'dns-listeners',
      scenario,
      proxy,
      istiod: resources(readJson<SectionJson>(join(dir, `${proxy}.json`)), ['listeners', 'routes', 'clusters']),
      meshpilot: resources(meshpilotJson(generateFor(p, gens, capturedProxy(spec))), ['listeners', 'routes', 'clusters']),
    }));
  return [
    ...cases('dns-listeners', push, DNS_LISTENERS_ISTIOD_DIR, DNS_LISTENERS_PROXIES),
    ...cases('dual-stack', dualStack, DNS_LISTENERS_DUAL_STACK_ISTIOD_DIR, DNS_LISTENERS_DUAL_STACK_PROXIES),
  ];
}

export const CORPORA = { bookinfo, envoyfilter, 'gateway-api': gatewayApi, telemetry, wasm, 'dns-listeners': dnsListeners } as const;
export type CorpusName = keyof typeof CORPORA;

export async function loadCases(names: readonly CorpusName[] = Object.keys(CORPORA) as CorpusName[]): Promise<Case[]> {
  const out: Case[] = [];
  for (const n of names) out.push(...(await CORPORA[n]()));
  return out;
}
