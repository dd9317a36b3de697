/**
 * Routes with Gateway parents, as istiod binds them (extractParentReferenceInfo, referenceAllowed,
 * createRouteStatus): each parentRef to a Gateway of ours expands to that Gateway's listeners;
 * a listener admits the route when port, sectionName, hostnames (either side may be a wildcard)
 * and namespace (allowedRoutes) and kind agree. Admitted routes become one VirtualService per
 * (listener, hostname), merged across HTTPRoutes/GRPCRoutes by that key and sorted by Gateway
 * API precedence. A Service parent (GAMMA) gets its status here; its VirtualServices come from
 * gamma-routes.ts.
 */
import { fromJson, type JsonObject } from '@bufbuild/protobuf';
import {
  byCreationTimeGatewayApi,
  type Config,
  specJson,
  type GRPCRouteSpec,
  type HTTPRouteSpec,
  type ParentReference,
  type TCPRouteSpec,
  type TLSRouteSpec,
  hostsOverlap,
} from '../../config/index.js';
import { VirtualServiceSchema } from '../../gen/networking/v1alpha3/virtual_service_pb.js';
import { byNamespaceName } from '../indexes/config-order.js';
import {
  ISTIO_GATEWAY_CONTROLLER,
  renderConditions,
  type ConditionDraft,
  type ConditionError,
  type RouteParentStatus,
} from './conditions.js';
import { convertHttpRules, convertL4Rules, type RuleContext } from './gateway-route-rules.js';
import { KUBERNETES_GATEWAY_NAME, type ListenerParent } from './kube-gateways.js';
import { GATEWAY_API_GROUP } from '../../config/constants.js';

export type GatewayRouteKind = 'HTTPRoute' | 'GRPCRoute' | 'TCPRoute' | 'TLSRoute';
export type AnyRoute = Config<GatewayRouteKind>;

const MESH = 'mesh';

interface ParentDenial {
  readonly reason: 'NoMatchingParent' | 'NotAllowedByListeners' | 'NoMatchingListenerHostname';
  readonly message: string;
}

/** One parentRef bound to one parent (a listener, or the mesh for a Service). */
interface ParentBinding {
  readonly ref: ParentReference;
  readonly refString: string;
  readonly internalName: string;
  /** The listener's hostname ('' for none / the mesh). */
  readonly hostname: string;
  readonly bannedHostnames: ReadonlySet<string>;
  readonly gateway?: { readonly namespace: string; readonly name: string; readonly section: string };
  readonly denied: ParentDenial | undefined;
}

/** istiod's parentRefString: `group/kind/name/section/port.namespace`. */
export function parentRefString(ref: ParentReference, namespace: string): string {
  return `${ref.group ?? GATEWAY_API_GROUP}/${ref.kind ?? 'Gateway'}/${ref.name}/${ref.sectionName ?? ''}/${ref.port ?? 0}.${ref.namespace ?? namespace}`;
}

export interface RouteInputs {
  readonly domain: string;
  /** Listener parents by `ns/name` of their Gateway. */
  readonly listenersByGateway: ReadonlyMap<string, readonly ListenerParent[]>;
  readonly rule: Omit<RuleContext, 'routeKind' | 'namespace' | 'name' | 'enforceRefGrant'>;
}

/** A route's hostnames (empty for TCPRoute). */
function routeHostnames(route: AnyRoute): readonly string[] {
  return route.meta.kind === 'TCPRoute' ? [] : (specJson<HTTPRouteSpec | TLSRouteSpec>(route.spec).hostnames ?? []);
}

function routeParentRefs(route: AnyRoute): readonly ParentReference[] {
  return specJson<{ parentRefs?: readonly ParentReference[] }>(route.spec).parentRefs ?? [];
}

/** istiod's referenceAllowed for a listener parent. */
function listenerAllows(route: AnyRoute, ref: ParentReference, parent: ListenerParent): ParentDenial | undefined {
  if (ref.port !== undefined && ref.port !== 0 && ref.port !== parent.port)
    return { reason: 'NoMatchingParent', message: `port ${ref.port} not found` };
  if (ref.sectionName && ref.sectionName !== parent.sectionName)
    return { reason: 'NoMatchingParent', message: `sectionName "${ref.sectionName}" not found` };
  const hostnames = routeHostnames(route).length > 0 ? routeHostnames(route) : ['*'];
  if (parent.hostnames.length > 0) {
    let matched = false;
    let hostMatched = false;
    for (const rh of hostnames) {
      for (const ph of parent.hostnames) {
        const [ns, host] = ph.includes('/') ? [ph.slice(0, ph.indexOf('/')), ph.slice(ph.indexOf('/') + 1)] : ['*', ph];
        const hm = hostsOverlap(host, rh);
        hostMatched ||= hm;
        if (hm && (ns === '*' || ns === route.meta.namespace)) matched = true;
      }
    }
    if (!matched) {
      return hostMatched
        ? {
            reason: 'NotAllowedByListeners',
            message: `hostnames matched parent hostname "${parent.originalHostname}", but namespace "${route.meta.namespace}" is not allowed by the parent`,
          }
        : { reason: 'NoMatchingListenerHostname', message: `no hostnames matched parent hostname "${parent.originalHostname}"` };
    }
  }
  if (!parent.allowedKinds.some((k) => k.kind === route.meta.kind && (k.group ?? GATEWAY_API_GROUP) === GATEWAY_API_GROUP)) {
    return { reason: 'NotAllowedByListeners', message: `kind ${GATEWAY_API_GROUP}/v1/${route.meta.kind} is not allowed` };
  }
  return undefined;
}

/** Every binding of a route's parentRefs, in parentRefString order (istiod's extractParentReferenceInfo). */
function bindings(route: AnyRoute, inputs: RouteInputs): ParentBinding[] {
  const ns = route.meta.namespace;
  const out: ParentBinding[] = [];
  for (const ref of routeParentRefs(route)) {
    const group = ref.group ?? GATEWAY_API_GROUP;
    const kind = ref.kind ?? 'Gateway';
    const refString = parentRefString(ref, ns);
    if ((group === '' || group === 'core') && kind === 'Service') {
      const svcNs = ref.namespace ?? ns;
      const denied = inputs.rule.serviceExists(svcNs, ref.name)
        ? undefined
        : { reason: 'NoMatchingParent' as const, message: `parent service: "${ref.name}" not found` };
      out.push({ ref, refString, internalName: MESH, hostname: '', bannedHostnames: new Set(), denied });
      continue;
    }
    if (group !== GATEWAY_API_GROUP || kind !== 'Gateway') continue;
    const gwNs = ref.namespace ?? ns;
    const listeners = inputs.listenersByGateway.get(`${gwNs}/${ref.name}`) ?? [];
    for (const l of listeners) {
      const banned = new Set(
        listeners.filter((o) => o !== l && o.port === l.port && o.protocol === l.protocol).map((o) => o.originalHostname),
      );
      banned.delete(l.originalHostname);
      out.push({
        ref,
        refString,
        internalName: l.internalName,
        hostname: l.originalHostname,
        bannedHostnames: banned,
        gateway: { namespace: l.gatewayNamespace, name: l.gatewayName, section: l.sectionName },
        denied: listenerAllows(route, ref, l),
      });
    }
  }
  return out.sort((a, b) => (a.refString < b.refString ? -1 : a.refString > b.refString ? 1 : 0));
}

const RANK: Readonly<Record<ParentDenial['reason'] | 'none', number>> = {
  none: 0,
  NotAllowedByListeners: 1,
  NoMatchingListenerHostname: 2,
  NoMatchingParent: 4,
};

/** istiod's createRouteStatus: one entry per parentRef; the least severe binding wins; sorted descending by ref string. */
function routeStatus(all: readonly ParentBinding[], routeError: (mesh: boolean) => ConditionError | undefined): RouteParentStatus[] {
  const byRef = new Map<string, ParentBinding[]>();
  for (const b of all) byRef.set(b.refString, [...(byRef.get(b.refString) ?? []), b]);
  const out: { refString: string; status: RouteParentStatus }[] = [];
  for (const [refString, results] of byRef) {
    let report = results[0]!;
    let denied = report.denied ? { ...report.denied } : undefined;
    let rank = RANK[report.denied?.reason ?? 'none'];
    for (const r of results.slice(1)) {
      const rr = RANK[r.denied?.reason ?? 'none'];
      if (rr < rank) {
        rank = rr;
        report = r;
        denied = r.denied ? { ...r.denied } : undefined;
      } else if (rr === rank && r.denied) {
        denied = denied ? { ...denied, message: `${denied.message}; ${r.denied.message}` } : { ...r.denied };
      }
    }
    const successes = results.filter((r) => !r.denied).length;
    const conds: Record<string, ConditionDraft> = {
      Accepted: { reason: 'Accepted', message: successes > 1 ? `Route was valid, bound to ${successes} parents` : 'Route was valid' },
      ResolvedRefs: { reason: 'ResolvedRefs', message: 'All references resolved' },
    };
    const err = routeError(report.internalName === MESH);
    if (err) conds.ResolvedRefs!.error = err;
    if (denied) conds.Accepted!.error = { reason: denied.reason, message: denied.message };
    out.push({
      refString,
      status: { parentRef: parentRefJson(report.ref), controllerName: ISTIO_GATEWAY_CONTROLLER, conditions: renderConditions(conds) },
    });
  }
  return out.sort((a, b) => (a.refString > b.refString ? -1 : a.refString < b.refString ? 1 : 0)).map((x) => x.status);
}

/** The parentRef as written in status (the fields the user set, with the API server's defaults). */
function parentRefJson(ref: ParentReference): Record<string, string | number> {
  const out: Record<string, string | number> = { group: ref.group ?? GATEWAY_API_GROUP, kind: ref.kind ?? 'Gateway', name: ref.name };
  if (ref.namespace !== undefined) out.namespace = ref.namespace;
  if (ref.sectionName !== undefined) out.sectionName = ref.sectionName;
  if (ref.port !== undefined) out.port = ref.port;
  return out;
}

/** istiod's hostnameAllowedByIsolation: a wildcard listener yields hosts a more specific sibling listener owns. */
function allowedByIsolation(b: ParentBinding, routeHost: string): boolean {
  const ours = b.hostname;
  if (ours !== '' && !ours.startsWith('*')) return true;
  if (ours !== '' && !hostsOverlap(routeHost, ours)) return false;
  for (const check of b.bannedHostnames) {
    if (ours.length > check.length) continue;
    if (subsetOf(routeHost, check)) return false;
  }
  return true;
}

/** host.Name.SubsetOf: every name `a` matches is matched by `b`. */
function subsetOf(a: string, b: string): boolean {
  if (b === '*' || b === '') return true;
  if (b.startsWith('*')) return a.endsWith(b.slice(1));
  return !a.startsWith('*') && a === b;
}

/** istiod's sortHTTPRoutes (stable): exact > prefix > regex, longer first, method, more headers, more query params; no match last. */
function sortHttpRoutes(routes: JsonObject[]): JsonObject[] {
  const uriOf = (r: JsonObject): JsonObject | undefined => (r.match as JsonObject[] | undefined)?.[0]?.uri as JsonObject | undefined;
  const rank = (u: JsonObject | undefined): number => (!u ? -1 : 'exact' in u ? 3 : 'prefix' in u ? 2 : 'regex' in u ? 1 : -1);
  const len = (u: JsonObject | undefined): number => (u ? String(Object.values(u)[0] ?? '').length : 0);
  const m0 = (r: JsonObject): JsonObject | undefined => (r.match as JsonObject[] | undefined)?.[0];
  const count = (o: unknown): number => (o && typeof o === 'object' ? Object.keys(o).length : 0);
  const before = (a: JsonObject, b: JsonObject): boolean => {
    const ma = m0(a);
    const mb = m0(b);
    if (!ma) return false;
    if (!mb) return true;
    const [ra, rb] = [rank(uriOf(a)), rank(uriOf(b))];
    if (ra !== rb) return ra > rb;
    const [la, lb] = [len(uriOf(a)), len(uriOf(b))];
    if (la !== lb) return la > lb;
    if ((ma.method === undefined) !== (mb.method === undefined)) return ma.method !== undefined;
    if (count(ma.headers) !== count(mb.headers)) return count(ma.headers) > count(mb.headers);
    return count(ma.queryParams) > count(mb.queryParams);
  };
  return routes
    .map((r, i) => ({ r, i }))
    .sort((x, y) => (before(x.r, y.r) ? -1 : before(y.r, x.r) ? 1 : x.i - y.i))
    .map((x) => x.r);
}

interface Keyed {
  readonly key: string;
  readonly route: AnyRoute;
  readonly host: string;
  readonly gateway: string;
  readonly http?: JsonObject[];
  readonly tcp?: JsonObject[];
  readonly tls?: JsonObject[];
}

export interface RouteResult {
  readonly virtualServices: Config<'VirtualService'>[];
  /** Route statuses by `Kind/ns/name`. */
  readonly statuses: Map<string, RouteParentStatus[]>;
  /** Attached route counts by `gwNs/gwName/listener`. */
  readonly attachments: Map<string, number>;
}

/** `base`: the (oldest) route it comes from, whose namespace and creation time it takes, as istiod's. */
function makeVirtualService(name: string, base: AnyRoute, spec: JsonObject, version: string, parents: string): Config<'VirtualService'> {
  const created = base.meta.creationTimestamp;
  return Object.freeze({
    meta: Object.freeze({
      kind: 'VirtualService' as const,
      name,
      namespace: base.meta.namespace,
      labels: Object.freeze({}),
      annotations: Object.freeze({ 'internal.istio.io/route-semantics': 'gateway', 'internal.istio.io/parents': parents }),
      resourceVersion: `gateway-api:${version}`,
      ...(created !== undefined ? { creationTimestamp: created } : {}),
    }),
    spec: fromJson(VirtualServiceSchema, spec),
  });
}

/** Every route (any kind) in namespace/name order → Gateway-bound VirtualServices, statuses, attachments. */
export function convertRoutes(routes: readonly AnyRoute[], inputs: RouteInputs): RouteResult {
  const statuses = new Map<string, RouteParentStatus[]>();
  const attachments = new Map<string, number>();
  const keyed: Keyed[] = [];
  const tcpLike: Config<'VirtualService'>[] = [];
  for (const route of [...routes].sort(byNamespaceName)) {
    const kind = route.meta.kind;
    const all = bindings(route, inputs);
    const ctx: RuleContext = {
      ...inputs.rule,
      routeKind: kind,
      namespace: route.meta.namespace,
      name: route.meta.name,
      enforceRefGrant: true,
    };
    const needGw = all.some((b) => b.internalName !== MESH);
    const spec = specJson<HTTPRouteSpec & GRPCRouteSpec & TCPRouteSpec & TLSRouteSpec>(route.spec);
    const converted = !needGw
      ? undefined
      : kind === 'HTTPRoute' || kind === 'GRPCRoute'
        ? convertHttpRules(ctx, spec.rules ?? [])
        : convertL4Rules(ctx, spec.rules ?? [], kind === 'TLSRoute' ? (spec.hostnames ?? []) : undefined);
    // GAMMA routes: only their status here (backends are checked with the mesh rules: no ReferenceGrant).
    const meshError = (): ConditionError | undefined => {
      if (!all.some((b) => b.internalName === MESH)) return undefined;
      const meshCtx = { ...ctx, enforceRefGrant: false };
      const mesh =
        kind === 'HTTPRoute' || kind === 'GRPCRoute'
          ? convertHttpRules(meshCtx, spec.rules ?? [])
          : convertL4Rules(meshCtx, spec.rules ?? [], undefined);
      return mesh.error;
    };
    const meshErr = meshError();
    statuses.set(
      `${kind}/${route.meta.namespace}/${route.meta.name}`,
      routeStatus(all, (mesh) => (mesh ? meshErr : converted?.error)),
    );
    const admitted = all
      .filter((b) => !b.denied)
      .sort((a, b) => (a.internalName < b.internalName ? -1 : a.internalName > b.internalName ? 1 : 0));
    for (const b of admitted) {
      if (!b.gateway) continue;
      const key = `${b.gateway.namespace}/${b.gateway.name}/${b.gateway.section}`;
      attachments.set(key, (attachments.get(key) ?? 0) + 1);
    }
    if (!converted?.routes || converted.routes.length === 0) continue;
    let count = 0;
    for (const b of admitted) {
      if (b.internalName === MESH) continue;
      if (kind === 'TCPRoute') {
        const name = `${route.meta.name}~tcp~${count++}~${KUBERNETES_GATEWAY_NAME}`;
        tcpLike.push(
          makeVirtualService(
            name,
            route,
            { hosts: ['*'], gateways: [b.internalName], tcp: converted.routes },
            route.meta.resourceVersion,
            parentsOf(route),
          ),
        );
        continue;
      }
      if (kind === 'TLSRoute') {
        let hosts = routeHostnames(route).length > 0 ? [...routeHostnames(route)] : ['*'];
        let tls = converted.routes;
        if (b.hostname !== '') {
          hosts = intersectNames(hosts, b.hostname);
          tls = constrainTls(tls, b.hostname);
        }
        for (const h of hosts) {
          const name = `${route.meta.name}~tls~${count++}~${KUBERNETES_GATEWAY_NAME}`;
          tcpLike.push(
            makeVirtualService(name, route, { hosts: [h], gateways: [b.internalName], tls }, route.meta.resourceVersion, parentsOf(route)),
          );
        }
        continue;
      }
      const hosts = routeHostnames(route).length > 0 ? routeHostnames(route) : ['*'];
      for (const h of hosts) {
        if (!allowedByIsolation(b, h)) continue;
        keyed.push({ key: `${b.internalName}/${h}`, route, host: h, gateway: b.internalName, http: converted.routes });
      }
    }
  }
  return { virtualServices: [...mergeHttp(keyed), ...tcpLike], statuses, attachments };
}

const parentsOf = (route: AnyRoute): string => `${route.meta.kind}/${route.meta.name}.${route.meta.namespace}`;

/** host.Names.Intersection for a listener hostname: the more specific of each overlapping pair. */
function intersectNames(hosts: readonly string[], listener: string): string[] {
  const out = new Set<string>();
  for (const h of hosts) {
    if (subsetOf(h, listener)) out.add(h);
    else if (subsetOf(listener, h)) out.add(listener);
  }
  return [...out].sort();
}

function constrainTls(routes: readonly JsonObject[], listener: string): JsonObject[] {
  const out: JsonObject[] = [];
  for (const r of routes) {
    const match = ((r.match as JsonObject[] | undefined) ?? []).map((m) => ({
      ...m,
      sniHosts: intersectNames((m.sniHosts as string[] | undefined) ?? [], listener),
    }));
    if (match.length === 0 || match.some((m) => m.sniHosts.length > 0)) out.push({ ...r, ...(match.length > 0 ? { match } : {}) });
  }
  return out;
}

/** istiod's mergeHTTPRoutes: one VirtualService per key, routes of every route with that key (creation, then namespace/name order), re-sorted. */
function mergeHttp(keyed: readonly Keyed[]): Config<'VirtualService'>[] {
  const byKey = new Map<string, Keyed[]>();
  for (const k of keyed) byKey.set(k.key, [...(byKey.get(k.key) ?? []), k]);
  const out: Config<'VirtualService'>[] = [];
  for (const [key, unsorted] of [...byKey].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    // istiod's sortRoutesByCreationTime: oldest route first, then namespace/name.
    const list = [...unsorted].sort((a, b) => byCreationTimeGatewayApi(a.route, b.route));
    const first = list[0]!;
    const http = sortHttpRoutes(list.flatMap((k) => k.http ?? []));
    const version = list.map((k) => k.route.meta.resourceVersion).join(',');
    out.push(
      makeVirtualService(
        key.replaceAll('/', '~'),
        first.route,
        { hosts: [first.host], gateways: [first.gateway], http },
        version,
        list.map((k) => parentsOf(k.route)).join(','),
      ),
    );
  }
  return out;
}
