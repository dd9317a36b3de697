/**
 * The pods and services the Envoy mesh tests share: a client (`sleep`), two versions of `echo`, a
 * `mirror` workload in another namespace (also the client with another identity), and `plain`,
 * a pod without sidecar. Each routing scenario has its own ServiceEntry over the echo pods, so its
 * Envoy cluster (outlier ejections, circuit breakers) starts fresh.
 */
import assert from 'node:assert/strict';
import { after, afterEach, before } from 'node:test';
import { fqdn, startEnvoyMesh, type EnvoyMesh, type ServiceDef, type WorkloadDef } from './mesh.js';
import type { Tally } from './netns-apps.js';
import { waitFor } from '../wait.js';

export const NS = 'demo';
export const OTHER_NS = 'other';
export const PREFIX = '10.66.0.';

export const WORKLOADS: readonly WorkloadDef[] = [
  { name: 'sleep', namespace: NS, serviceAccount: 'sleep', labels: { app: 'sleep', version: 'v1' }, ip: `${PREFIX}10`, sidecar: true },
  { name: 'echo-v1', namespace: NS, serviceAccount: 'echo', labels: { app: 'echo', version: 'v1' }, ip: `${PREFIX}11`, sidecar: true },
  { name: 'echo-v2', namespace: NS, serviceAccount: 'echo', labels: { app: 'echo', version: 'v2' }, ip: `${PREFIX}12`, sidecar: true },
  {
    name: 'mirror',
    namespace: OTHER_NS,
    serviceAccount: 'mirror',
    labels: { app: 'mirror', version: 'v1' },
    ip: `${PREFIX}13`,
    sidecar: true,
  },
  { name: 'plain', namespace: NS, serviceAccount: 'plain', labels: { app: 'plain' }, ip: `${PREFIX}20`, sidecar: false },
];

/** Services over the echo pods, one per scenario, plus `mirror` and `sleep`. */
export const ECHO_SERVICES = [
  'echo',
  'split',
  'match',
  'fault',
  'retry',
  'slow',
  'shadow',
  'rewrite',
  'hash',
  'outlier',
  'pool',
  'headers',
  'cors',
  'h2',
] as const;
export type EchoService = (typeof ECHO_SERVICES)[number];

/** TCP services over the echo pods (port 9090): tcp_proxy filter chains instead of HTTP routes. */
export const TCP_SERVICES = ['tcp', 'tcp-split', 'tcp-authz'] as const;

export const SERVICES: readonly ServiceDef[] = [
  ...ECHO_SERVICES.map((name, i) => ({ name, namespace: NS, vip: `10.96.0.${10 + i}`, selector: { app: 'echo' } })),
  ...TCP_SERVICES.map((name, i) => ({
    name,
    namespace: NS,
    vip: `10.96.2.${10 + i}`,
    selector: { app: 'echo' },
    protocol: 'TCP' as const,
  })),
  { name: 'mirror', namespace: OTHER_NS, vip: '10.96.1.10', selector: { app: 'mirror' } },
  { name: 'sleep', namespace: NS, vip: '10.96.1.11', selector: { app: 'sleep' } },
];

export const host = (service: string, namespace = NS): string => fqdn(service, namespace);
export const spiffe = (namespace: string, sa: string): string => `spiffe://cluster.local/ns/${namespace}/sa/${sa}`;

/** A networking.istio.io/v1 document. */
export function istio(kind: string, name: string, spec: Record<string, unknown>, namespace = NS): Record<string, unknown> {
  const group = ['PeerAuthentication', 'AuthorizationPolicy', 'RequestAuthentication'].includes(kind)
    ? 'security.istio.io/v1'
    : 'networking.istio.io/v1';
  return { apiVersion: group, kind, metadata: { name, namespace }, spec };
}

/** DestinationRule subsets v1/v2 by the version label, plus `trafficPolicy`. */
export function versionSubsets(service: string, trafficPolicy?: Record<string, unknown>): Record<string, unknown> {
  return istio('DestinationRule', service, {
    host: host(service),
    ...(trafficPolicy ? { trafficPolicy } : {}),
    subsets: [
      { name: 'v1', labels: { version: 'v1' } },
      { name: 'v2', labels: { version: 'v2' } },
    ],
  });
}

/** A tally for a failure message (one sample: bodies are long). */
export const showTally = (t: Tally): string => JSON.stringify({ ...t, samples: t.samples.slice(0, 1) });

/**
 * The hooks of a suite over this fixture: the mesh is started before and stopped after, and after
 * every test no Envoy has rejected an update, meshpilot counted no rejection, and no Envoy is left
 * with a cluster or listener warming. Returns the
 * mesh's accessor (the mesh exists once the `before` hook ran).
 */
export function useEnvoyMesh(): () => EnvoyMesh {
  let mesh: EnvoyMesh | undefined;
  before(async () => {
    mesh = await startEnvoyMesh(WORKLOADS, SERVICES);
  });
  after(async () => {
    await mesh?.stop();
  });
  afterEach(async () => {
    const m = mesh!;
    const r = await m.rejects();
    assert.deepEqual(r, { envoy: Object.fromEntries(Object.keys(r.envoy).map((k) => [k, 0])), pilot: 0 }, `rejected config\n${m.logs()}`);
    // A test may end right after an edit: warming that is still in progress gets a moment.
    await waitFor(async () => Object.values(await m.warming()).every((n) => n === 0), {
      timeoutMs: 15_000,
      description: 'no cluster or listener left warming',
    }).catch(async (e: Error) => assert.fail(`${e.message}: ${JSON.stringify(await m.warming())}\n${m.logs()}`));
  });
  return () => {
    if (!mesh) throw new Error('the Envoy mesh is not started');
    return mesh;
  };
}
