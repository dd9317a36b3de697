/**
 * The NDS (DNS name table) corpus shared by the istiod capture (scripts/istiod-nds-golden.ts) and
 * the parity test (nds-parity.test.ts): the config directory, the proxies that ask, and how the
 * reference istiod is run.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO_ROOT } from '../support/paths.js';
import type { NodeSpec } from '../support/scenario.js';

export const NDS_DIR = join(REPO_ROOT, 'testdata', 'nds');
export const NDS_CONFIG_DIR = join(NDS_DIR, 'config');
export const NDS_GOLDEN = join(NDS_DIR, 'istiod.json');
/** Kubernetes objects (applied to a real API server for istiod), and istiod's tables for them. */
export const NDS_CLUSTER_DIR = join(NDS_DIR, 'cluster');
export const NDS_KUBE_GOLDEN = join(NDS_DIR, 'istiod-kube.json');

/** istiod allocates ServiceEntry addresses in its registry (its controller would need Kubernetes), as meshpilot does. */
export const NDS_ISTIOD_ENV: Readonly<Record<string, string>> = { PILOT_ENABLE_IP_AUTOALLOCATE: 'false' };

const capture = { DNS_CAPTURE: 'true', DNS_AUTO_ALLOCATE: 'true' };

/** Proxies with the metadata istio-agent sends for them (ISTIO_META_DNS_CAPTURE, ISTIO_META_DNS_AUTO_ALLOCATE). */
export const NDS_PROXIES: readonly NodeSpec[] = [
  { id: 'sidecar~10.0.0.5~app-0.default~default.svc.cluster.local', labels: { app: 'app' }, metadata: capture },
  // DNS capture without auto-allocation: hosts without addresses have no entry.
  { id: 'sidecar~10.0.0.6~plain-0.default~default.svc.cluster.local', labels: { app: 'plain' }, metadata: { DNS_CAPTURE: 'true' } },
  // IPv6 only: auto-allocated IPv6 addresses; ServiceEntry addresses kept whatever their family.
  { id: 'sidecar~fd00::5~app6-0.default~default.svc.cluster.local', labels: { app: 'app6' }, metadata: capture },
  // Another namespace: its own private host, the other namespace's copy of a shared host.
  { id: 'sidecar~10.0.1.5~app-0.other~other.svc.cluster.local', labels: { app: 'app' }, metadata: capture },
  // A Sidecar narrows the table to its egress hosts.
  { id: 'sidecar~10.0.2.5~app-0.restricted~restricted.svc.cluster.local', labels: { app: 'app' }, metadata: capture },
  { id: 'router~10.0.3.5~gateway-0.istio-system~istio-system.svc.cluster.local', labels: { istio: 'ingressgateway' } },
];

/** Proxies of the Kubernetes capture: the service's own namespace (bare short names) and another. */
export const NDS_KUBE_PROXIES: readonly NodeSpec[] = [
  { id: 'sidecar~10.244.1.30~client-0.default~default.svc.cluster.local', labels: { app: 'client' }, metadata: capture },
  { id: 'sidecar~10.244.2.30~client-0.db~db.svc.cluster.local', labels: { app: 'client' }, metadata: { DNS_CAPTURE: 'true' } },
];

export interface NdsGolden {
  readonly istiod: string;
  readonly env: Readonly<Record<string, string>>;
  /** sha256 of the config files: the test says "recapture" when the config changed since. */
  readonly configDigest: string;
  readonly proxies: readonly { readonly id: string; readonly table: unknown }[];
}

export function ndsConfigDigest(dir = NDS_CONFIG_DIR): string {
  const h = createHash('sha256');
  for (const f of readdirSync(dir).sort()) h.update(f).update(readFileSync(join(dir, f)));
  return h.digest('hex');
}
