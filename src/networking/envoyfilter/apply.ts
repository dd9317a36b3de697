import { fromBinary, toBinary, type DescMessage, type MessageShape } from '@bufbuild/protobuf';
import { ClusterSchema, type Cluster } from '../../gen/envoy/config/cluster/v3/cluster_pb.js';
import { ListenerSchema, type Listener } from '../../gen/envoy/config/listener/v3/listener_pb.js';
import { RouteConfigurationSchema } from '../../gen/envoy/config/route/v3/route_pb.js';
import { type ProxyPatches, envoyFilterRegistries, PatchContext } from '../../model/index.js';
import { formatViolations, validateMessage, makeResource, type XdsResource } from '../../xds/index.js';
import { TypeUrl } from '../../xds/type-urls.js';
import { insertedClusters, patchCluster } from './cluster-patch.js';
import { patchListeners, type PatchRun } from './listener-patch.js';
import { listenerRuleViolation } from './envoy-rules.js';
import type { GatewayPortMap } from './match.js';
import { patchRouteConfiguration } from './route-patch.js';

/** A patch whose result Envoy would reject: the unpatched resource (or nothing, for an ADD) is sent instead. */
export interface PatchProblem {
  /** The resource, `<type> <name>` (`listener virtualInbound`, `cluster (added)`). */
  readonly resource: string;
  /** `namespace/name` of the EnvoyFilters whose patches took effect on it. */
  readonly filters: readonly string[];
  readonly reason: string;
}

export interface PatchedList {
  readonly resources: readonly XdsResource[];
  readonly problems: readonly PatchProblem[];
}

/** One resource's patch result: a replacement, `null` when removed, or the base with a problem. */
type Outcome = { readonly res: XdsResource | null; readonly problem?: PatchProblem };

/**
 * Patched results per unpatched resource (the cached, shared one) and patch key: proxies with the
 * same patches share one result; a proxy without patches never reaches here, so it always gets
 * the unpatched resource. Weak on the base: a rebuilt resource starts afresh.
 */
const outcomes = new WeakMap<XdsResource, Map<string, Outcome>>();
const MAX_KEYS_PER_RESOURCE = 16;

function cached(base: XdsResource, key: string, build: () => Outcome): Outcome {
  let m = outcomes.get(base);
  if (!m) outcomes.set(base, (m = new Map()));
  let o = m.get(key);
  if (!o) {
    o = build();
    if (m.size >= MAX_KEYS_PER_RESOURCE) m.delete(m.keys().next().value as string);
    m.set(key, o);
  }
  return o;
}

const newRun = (patches: ProxyPatches): PatchRun => ({
  patches: patches.byApplyTo,
  registry: envoyFilterRegistries().json,
  touched: new Set(),
});

/** Envoy's load-time rules beyond PGV, per resource type (see envoy-rules.ts). */
function ruleViolation(typeUrl: string, msg: unknown): string | undefined {
  return typeUrl === TypeUrl.Listener ? listenerRuleViolation(msg as Listener) : undefined;
}

/** Encodes a patched message after Envoy's validate rules; a problem instead when it breaks any. */
function encode<D extends DescMessage>(
  schema: D,
  typeUrl: string,
  msg: MessageShape<D>,
  run: PatchRun,
  label: string,
): { res?: XdsResource; problem?: PatchProblem } {
  try {
    const violations = validateMessage(schema, msg, envoyFilterRegistries().pgv);
    if (violations.length > 0) return { problem: { resource: label, filters: [...run.touched], reason: formatViolations(violations) } };
    const broken = ruleViolation(typeUrl, msg);
    if (broken !== undefined) return { problem: { resource: label, filters: [...run.touched], reason: broken } };
    const name = (msg as { name?: string }).name ?? '';
    return { res: makeResource(name, typeUrl, toBinary(schema, msg)) };
  } catch (err) {
    return { problem: { resource: label, filters: [...run.touched], reason: err instanceof Error ? err.message : String(err) } };
  }
}

/** Patches one encoded resource: decode, `patch` (false = removed), validate, encode; a throw or a broken rule keeps the base. */
function patchOne<D extends DescMessage>(
  schema: D,
  typeUrl: string,
  base: XdsResource,
  key: string,
  patches: ProxyPatches,
  kind: string,
  patch: (run: PatchRun, msg: MessageShape<D>) => boolean,
): Outcome {
  return cached(base, key, () => {
    const run = newRun(patches);
    const label = `${kind} ${base.name}`;
    try {
      const msg = fromBinary(schema, base.value);
      if (!patch(run, msg)) return { res: null };
      if (run.touched.size === 0) return { res: base };
      const out = encode(schema, typeUrl, msg, run, label);
      return out.res ? { res: out.res } : { res: base, ...(out.problem ? { problem: out.problem } : {}) };
    } catch (err) {
      return {
        res: base,
        problem: { resource: label, filters: [...run.touched], reason: err instanceof Error ? err.message : String(err) },
      };
    }
  });
}

/** Added resources (ADD patches), each validated alone; an invalid one is left out. */
function added<D extends DescMessage>(
  schema: D,
  typeUrl: string,
  kind: string,
  patches: ProxyPatches,
  make: (run: PatchRun) => MessageShape<D>[],
): PatchedList {
  const resources: XdsResource[] = [];
  const problems: PatchProblem[] = [];
  const run = newRun(patches);
  for (const msg of make(run)) {
    const name = (msg as { name?: string }).name ?? '';
    const out = encode(schema, typeUrl, msg, run, `${kind} ${name} (added)`);
    if (out.res) resources.push(out.res);
    if (out.problem) problems.push(out.problem);
  }
  return { resources, problems };
}

function collect(outcomes: readonly Outcome[], extra: PatchedList[] = []): PatchedList {
  const resources: XdsResource[] = [];
  const problems: PatchProblem[] = [];
  for (const o of outcomes) {
    if (o.res) resources.push(o.res);
    if (o.problem) problems.push(o.problem);
  }
  for (const e of extra) {
    resources.push(...e.resources);
    problems.push(...e.problems);
  }
  return { resources, problems };
}

/** istiod's listener contexts: sidecars' virtualInbound is inbound, every other listener outbound; a router's are GATEWAY. */
export function patchListenerResources(router: boolean, patches: ProxyPatches, base: readonly XdsResource[]): PatchedList {
  const patchWith = (ctx: PatchContext, r: XdsResource): Outcome =>
    patchOne(ListenerSchema, TypeUrl.Listener, r, `${ctx}|${patches.key}`, patches, 'listener', (run, l: Listener) => {
      // Inbound HTTP route configurations are inlined in virtualInbound: istiod patches them as it builds them.
      const inline =
        ctx === PatchContext.SIDECAR_INBOUND
          ? {
              ...run,
              inlineRoutes: (
                hcm: import('../../gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js').HttpConnectionManager,
              ) => {
                if (hcm.routeSpecifier.case === 'routeConfig')
                  patchRouteConfiguration(PatchContext.SIDECAR_INBOUND, run, hcm.routeSpecifier.value);
              },
            }
          : run;
      return patchListeners(ctx, inline, [l], true).length > 0;
    });
  if (router) {
    return collect(
      base.map((r) => patchWith(PatchContext.GATEWAY, r)),
      [added(ListenerSchema, TypeUrl.Listener, 'listener', patches, (run) => patchListeners(PatchContext.GATEWAY, run, [], false))],
    );
  }
  const outs = base.map((r) => patchWith(r.name === 'virtualInbound' ? PatchContext.SIDECAR_INBOUND : PatchContext.SIDECAR_OUTBOUND, r));
  return collect(outs, [
    added(ListenerSchema, TypeUrl.Listener, 'listener', patches, (run) => [
      ...patchListeners(PatchContext.SIDECAR_INBOUND, run, [], false),
      ...patchListeners(PatchContext.SIDECAR_OUTBOUND, run, [], false),
    ]),
  ]);
}

/** RDS: sidecar route configurations are outbound (inbound ones are inline), a router's GATEWAY. */
export function patchRouteResources(
  router: boolean,
  patches: ProxyPatches,
  base: readonly XdsResource[],
  portMap?: GatewayPortMap,
): PatchedList {
  const ctx = router ? PatchContext.GATEWAY : PatchContext.SIDECAR_OUTBOUND;
  const ports = portMap ? [...portMap].map(([t, s]) => `${t}>${[...s].join('+')}`).join(',') : '';
  return collect(
    base.map((r) =>
      patchOne(RouteConfigurationSchema, TypeUrl.RouteConfiguration, r, `${ctx}|${patches.key}|${ports}`, patches, 'route', (run, rc) => {
        patchRouteConfiguration(ctx, portMap ? { ...run, portMap } : run, rc);
        return true;
      }),
    ),
  );
}

const isInboundCluster = (name: string): boolean => name.startsWith('inbound|') || name === 'InboundPassthroughCluster';

/**
 * CDS in istiod's order: outbound clusters (BlackHole, Passthrough) patched as SIDECAR_OUTBOUND,
 * the outbound ADDs, inbound clusters as SIDECAR_INBOUND (matched by their services' `hosts`),
 * the inbound ADDs; a router's all GATEWAY, ADDs last.
 */
export function patchClusterResources(
  router: boolean,
  patches: ProxyPatches,
  base: readonly XdsResource[],
  inboundHosts: (name: string) => readonly string[],
): PatchedList {
  const patchWith = (ctx: PatchContext, r: XdsResource, hosts: readonly string[]): Outcome =>
    patchOne(ClusterSchema, TypeUrl.Cluster, r, `${ctx}|${patches.key}|${hosts.join(',')}`, patches, 'cluster', (run, c: Cluster) =>
      patchCluster(ctx, run, c, hosts),
    );
  const adds = (ctx: PatchContext): PatchedList =>
    added(ClusterSchema, TypeUrl.Cluster, 'cluster', patches, (run) => insertedClusters(ctx, run));
  if (router)
    return collect(
      base.map((r) => patchWith(PatchContext.GATEWAY, r, [])),
      [adds(PatchContext.GATEWAY)],
    );
  const outbound = collect(
    base.filter((r) => !isInboundCluster(r.name)).map((r) => patchWith(PatchContext.SIDECAR_OUTBOUND, r, [])),
    [adds(PatchContext.SIDECAR_OUTBOUND)],
  );
  const inbound = collect(
    base.filter((r) => isInboundCluster(r.name)).map((r) => patchWith(PatchContext.SIDECAR_INBOUND, r, inboundHosts(r.name))),
    [adds(PatchContext.SIDECAR_INBOUND)],
  );
  return collect([], [outbound, inbound]);
}
