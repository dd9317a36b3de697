/**
 * Gateway API status on a cluster (singleton task under `istio-leader`): the conditions istiod
 * writes (src/model/gateway-api gatewayApiStatus) go to the status subresource of every
 * GatewayClass, Gateway and route meshpilot owns, and stay current — the task recomputes them
 * after every push and writes only what changed. As istiod: observedGeneration is the object's
 * generation, lastTransitionTime changes only when a condition's status does, route parents of
 * other controllers are kept.
 */
import { kubeClient, type KubeClient, type KubeConfig } from '../kube/index.js';
import type { ConfigSnapshot } from '../config/index.js';
import { type Condition, type ObjectStatus, ISTIO_GATEWAY_CONTROLLER, gatewayApiStatus, type PushContext } from '../model/index.js';
import { errorMessage } from '../util/errors.js';
import type { Logger } from '../util/log.js';
import type { SingletonTask } from './webhooks.js';

const PLURAL: Readonly<Record<ObjectStatus['kind'], string>> = {
  GatewayClass: 'gatewayclasses',
  Gateway: 'gateways',
  HTTPRoute: 'httproutes',
  GRPCRoute: 'grpcroutes',
  TCPRoute: 'tcproutes',
  TLSRoute: 'tlsroutes',
};

export interface GatewayStatusOptions {
  readonly kubeConfig: KubeConfig;
  readonly snapshot: () => ConfigSnapshot;
  readonly push: () => PushContext;
  readonly logger: Logger;
  /** How often to look for changes (default 500 ms; a write only happens when something changed). */
  readonly intervalMs?: number;
}

interface LiveCondition extends Condition {
  readonly observedGeneration?: number;
  readonly lastTransitionTime?: string;
}

/** Conditions with observedGeneration and a lastTransitionTime kept while the status does not change. */
function stamp(
  conditions: readonly Condition[],
  live: readonly LiveCondition[] | undefined,
  generation: number,
  now: string,
): LiveCondition[] {
  return conditions.map((c) => {
    const old = live?.find((l) => l.type === c.type);
    const since = old && old.status === c.status && old.lastTransitionTime ? old.lastTransitionTime : now;
    return { ...c, observedGeneration: generation, lastTransitionTime: since };
  });
}

type Json = Record<string, unknown>;

/** The status to write, from the computed one and the live object. */
export function statusBody(st: ObjectStatus, live: Json, now: string): Json {
  const generation = Number((live.metadata as Json | undefined)?.generation ?? 0);
  const liveStatus = (live.status ?? {}) as Json;
  const liveConds = liveStatus.conditions as LiveCondition[] | undefined;
  switch (st.kind) {
    case 'GatewayClass':
      return { conditions: stamp(st.status.conditions, liveConds, generation, now) };
    case 'Gateway': {
      const liveListeners = (liveStatus.listeners as { name: string; conditions?: LiveCondition[] }[] | undefined) ?? [];
      return {
        addresses: st.status.addresses,
        conditions: stamp(st.status.conditions, liveConds, generation, now),
        listeners: st.status.listeners.map((l) => ({
          ...l,
          conditions: stamp(l.conditions, liveListeners.find((x) => x.name === l.name)?.conditions, generation, now),
        })),
      };
    }
    default: {
      const liveParents =
        (liveStatus.parents as { controllerName?: string; parentRef: Json; conditions?: LiveCondition[] }[] | undefined) ?? [];
      const same = (a: Json, b: Json): boolean => JSON.stringify(Object.entries(a).sort()) === JSON.stringify(Object.entries(b).sort());
      const ours = st.status.parents.map((p) => ({
        ...p,
        conditions: stamp(
          p.conditions,
          liveParents.find((x) => x.controllerName === ISTIO_GATEWAY_CONTROLLER && same(x.parentRef, p.parentRef))?.conditions,
          generation,
          now,
        ),
      }));
      return { parents: [...liveParents.filter((p) => p.controllerName !== ISTIO_GATEWAY_CONTROLLER), ...ours] };
    }
  }
}

function objectPath(st: ObjectStatus): string {
  const ns = st.kind === 'GatewayClass' ? '' : `/namespaces/${st.namespace}`;
  return `/apis/gateway.networking.k8s.io/v1${ns}/${PLURAL[st.kind]}/${st.name}`;
}

/** One pass: writes every status whose computed form changed since it was last written. Returns how many were written. */
export async function writeGatewayStatuses(
  rest: KubeClient,
  statuses: readonly ObjectStatus[],
  written: Map<string, string>,
  log: Logger,
): Promise<number> {
  let n = 0;
  const present = new Set<string>();
  for (const st of statuses) {
    const key = `${st.kind}/${st.namespace}/${st.name}`;
    present.add(key);
    const fingerprint = JSON.stringify(st.status);
    if (written.get(key) === fingerprint) continue;
    const path = objectPath(st);
    try {
      const live = (await rest.getOrUndefined(path)) as Json | undefined;
      if (!live) continue; // the built-in class without an object, or deleted meanwhile
      const body = { status: statusBody(st, live, new Date().toISOString().replace(/\.\d+Z$/, 'Z')) };
      await rest.call('PATCH', `${path}/status`, body, 'application/merge-patch+json');
      written.set(key, fingerprint);
      n++;
    } catch (err) {
      log.warn('writing Gateway API status failed (retried on the next pass)', { object: key, error: errorMessage(err) });
    }
  }
  for (const key of written.keys()) if (!present.has(key)) written.delete(key);
  return n;
}

export function gatewayStatusTask(opts: GatewayStatusOptions): SingletonTask {
  return {
    name: 'Gateway API status writer',
    run: async (signal) => {
      const rest = kubeClient(opts.kubeConfig);
      const written = new Map<string, string>();
      let lastPush: PushContext | undefined;
      let lastSnapshot: ConfigSnapshot | undefined;
      while (!signal.aborted) {
        const push = opts.push();
        const snapshot = opts.snapshot();
        // Recompute only when the config or the registry changed (a new push context or snapshot).
        if (push !== lastPush || snapshot !== lastSnapshot) {
          const statuses = gatewayApiStatus(snapshot, { domain: push.mesh.domain, registry: push.registry, secretsInConfig: false });
          const n = await writeGatewayStatuses(rest, statuses, written, opts.logger);
          if (n > 0) opts.logger.info('Gateway API status written', { objects: n });
          // A failed write leaves its fingerprint unset: retry on the next pass.
          if (statuses.every((s) => written.has(`${s.kind}/${s.namespace}/${s.name}`) || s.kind === 'GatewayClass')) {
            lastPush = push;
            lastSnapshot = snapshot;
          }
        }
        await new Promise((r) => setTimeout(r, opts.intervalMs ?? 500));
      }
    },
  };
}
