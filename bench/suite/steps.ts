/**
 * The churn steps every scenario runs, in order: its route edit, one endpoint added and removed,
 * a rolling restart of the target's workloads, a namespace-wide PeerAuthentication change.
 * Each says which proxies must see it, judged from what they hold when the step begins.
 */
import { randomBytes } from 'node:crypto';
import { Mesh, workloadAddress } from './mesh.js';
import type { Scenario, StepPlan } from './scenario.js';

export const STEP_NAMES = ['route', 'endpoint', 'restart', 'peerauthn', 'extra'] as const;
export type StepName = (typeof STEP_NAMES)[number];

export interface RestartOptions {
  /** Workloads replaced per batch (a rollout's maxSurge) and the pause between batches. */
  readonly batch: number;
  readonly intervalMs: number;
}

export const marker = (): string => `bench-${randomBytes(5).toString('hex')}`;

/** The proxies that hold an EDS resource of the target (`outbound|<port>|<subset>|<host>`). */
function edsOfTarget(mesh: Mesh): string {
  return `|${mesh.target.host}`;
}

function routeStep(s: Scenario, mesh: Mesh): StepPlan[] {
  if (!s.routeEdit) return [];
  const t = mesh.target;
  const e = s.routeEdit(mesh, t, marker());
  return [
    {
      name: 'route',
      label: 'VirtualService edit',
      batches: [[{ file: Mesh.file(t, 'routes'), docs: e.docs }]],
      intervalMs: 0,
      expect: e.expect,
      until: e.until,
    },
  ];
}

function endpointSteps(mesh: Mesh): StepPlan[] {
  const { doc, address } = mesh.extraEndpoint();
  const scope = edsOfTarget(mesh);
  const file = Mesh.file(mesh.target, 'extra');
  return [
    {
      name: 'endpoint-add',
      label: 'endpoint added',
      batches: [[{ file, docs: [doc] }]],
      intervalMs: 0,
      expect: { holding: { type: 'eds', name: scope } },
      until: { type: 'eds', scope, contains: [address] },
    },
    {
      name: 'endpoint-remove',
      label: 'endpoint removed',
      batches: [[{ file, docs: null }]],
      intervalMs: 0,
      expect: { holding: { type: 'eds', name: scope, bytes: address } },
      until: { type: 'eds', scope, lacks: [address] },
    },
  ];
}

/** The target's last `restart` workloads get new addresses, `batch` at a time, as a rollout replaces pods. */
function restartStep(mesh: Mesh, o: RestartOptions): StepPlan[] {
  const t = mesh.target;
  const restarted = mesh.restartedInstances();
  if (restarted.length === 0) return [];
  const batches = [];
  const done = new Set<number>();
  for (let i = 0; i < restarted.length; i += o.batch) {
    for (const k of restarted.slice(i, i + o.batch)) done.add(k);
    const replaced = new Set(done);
    batches.push([{ file: Mesh.file(t, 'workloads'), docs: mesh.workloadEntries(t, (k) => (replaced.has(k) ? 1 : 0)) }]);
  }
  const addr = (k: number, gen: number): string => workloadAddress(t.firstWorkload + k, gen);
  const scope = edsOfTarget(mesh);
  return [
    {
      name: 'restart',
      label: `rolling restart of ${restarted.length} workloads (${o.batch}/batch)`,
      batches,
      intervalMs: o.intervalMs,
      expect: { holding: { type: 'eds', name: scope } },
      until: { type: 'eds', scope, contains: restarted.map((k) => addr(k, 1)), lacks: restarted.map((k) => addr(k, 0)) },
    },
  ];
}

/** PERMISSIVE → STRICT in the target's namespace: its sidecars' virtualInbound must change. */
function peerAuthnStep(mesh: Mesh): StepPlan[] {
  const ns = mesh.target.ns;
  return [
    {
      name: 'peerauthn',
      label: `PeerAuthentication ${ns} PERMISSIVE→STRICT`,
      batches: [[{ file: Mesh.peerAuthnFile(ns), docs: [mesh.peerAuthentication(ns, 'STRICT')] }]],
      intervalMs: 0,
      expect: { kinds: ['sidecar'], namespaces: [ns], holding: { type: 'lds', name: 'virtualInbound' } },
      until: { type: 'lds', scope: 'virtualInbound', changed: true },
    },
  ];
}

export function scenarioSteps(s: Scenario, mesh: Mesh, only: ReadonlySet<StepName>, restart: RestartOptions): StepPlan[] {
  return [
    ...(only.has('route') ? routeStep(s, mesh) : []),
    ...(only.has('endpoint') ? endpointSteps(mesh) : []),
    ...(only.has('restart') ? restartStep(mesh, restart) : []),
    ...(only.has('peerauthn') ? peerAuthnStep(mesh) : []),
    ...(only.has('extra') ? (s.extraSteps?.(mesh) ?? []) : []),
  ];
}
