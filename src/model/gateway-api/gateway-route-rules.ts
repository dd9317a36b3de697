/**
 * Route rules of Gateway-bound HTTPRoutes, GRPCRoutes, TCPRoutes and TLSRoutes as VirtualService
 * JSON, in istiod's conversion (convertHTTPRoute & co.): one route per match named after the rule
 * (`<ns>.<route>.<index>` unless it has a name), filters as header operations, redirects (port
 * derived from the request or the scheme), rewrites, mirrors; retries and timeouts; weighted
 * backends (a lone backend has weight 0, i.e. all); cross-namespace backends only with a
 * ReferenceGrant. Errors are returned beside the routes for the route's status.
 */
import type { JsonObject } from '@bufbuild/protobuf';
import type {
  BackendRef,
  GRPCRouteMatch,
  GRPCRouteRule,
  HeaderModifier,
  HTTPRouteMatch,
  HTTPRouteRule,
  L4RouteRule,
  RouteFilter,
} from '../../config/index.js';
import { type ConditionError, joinErrors } from './conditions.js';
import type { ReferenceGrants } from './reference-grants.js';
import { gatewayApiDuration } from './route-filters.js';

export interface RuleContext {
  readonly routeKind: 'HTTPRoute' | 'GRPCRoute' | 'TCPRoute' | 'TLSRoute';
  readonly namespace: string;
  readonly name: string;
  readonly domain: string;
  readonly grants: ReferenceGrants;
  /** Gateway parents need a ReferenceGrant for cross-namespace backends; istiod's mesh rules do not. */
  readonly enforceRefGrant: boolean;
  /** Whether a Service `ns/name` exists (status only: the destination is kept either way). */
  readonly serviceExists: (namespace: string, name: string) => boolean;
}

/** Converted rules: `routes` undefined means a hard error (no routes at all for the parent). */
export interface Converted<T> {
  readonly routes: T[] | undefined;
  readonly error: ConditionError | undefined;
}

interface Dest {
  readonly destination: JsonObject;
  readonly error?: ConditionError;
  readonly hard?: boolean;
}

/** istiod's buildDestination for Service backends (the only kind meshpilot resolves). */
function buildDestination(ctx: RuleContext, to: BackendRef): Dest {
  const group = to.group ?? '';
  const kind = to.kind ?? 'Service';
  if (
    ctx.enforceRefGrant &&
    to.namespace !== undefined &&
    to.namespace !== ctx.namespace &&
    !ctx.grants.allows(ctx.routeKind, ctx.namespace, to.namespace, to.name, kind)
  ) {
    return {
      destination: {},
      error: {
        reason: 'RefNotPermitted',
        message: `backendRef ${to.name}/${to.namespace} not accessible to a ${ctx.routeKind} in namespace "${ctx.namespace}" (missing a ReferenceGrant?)`,
      },
    };
  }
  const namespace = to.namespace ?? ctx.namespace;
  if ((group !== '' && group !== 'core') || kind !== 'Service') {
    return {
      destination: {},
      error: { reason: 'InvalidKind', message: `referencing unsupported backendRef: group "${to.group ?? ''}" kind "${to.kind ?? ''}"` },
    };
  }
  if (to.name.includes('.'))
    return {
      destination: {},
      hard: true,
      error: { reason: 'InvalidDestination', message: 'service name invalid; the name of the Service must be used, not the hostname.' },
    };
  const host = `${to.name}.${namespace}.svc.${ctx.domain}`;
  if (to.port === undefined)
    return { destination: {}, hard: true, error: { reason: 'InvalidDestination', message: 'port is required in backendRef' } };
  const error = ctx.serviceExists(namespace, to.name) ? undefined : { reason: 'BackendNotFound', message: `backend(${host}) not found` };
  return { destination: { host, port: { number: to.port } }, ...(error ? { error } : {}) };
}

const isInvalidBackend = (e: ConditionError | undefined): boolean =>
  e !== undefined && ['RefNotPermitted', 'InvalidKind', 'BackendNotFound'].includes(e.reason);

/** Lower-cased header map; later duplicates ignored (istiod's headerListToMap). */
function headerMap(list: readonly { name: string; value: string }[] | undefined): JsonObject | undefined {
  if (!list || list.length === 0) return undefined;
  const out: JsonObject = {};
  for (const h of list) {
    const k = h.name.toLowerCase();
    if (!(k in out)) out[k] = h.value;
  }
  return out;
}

function headerOperations(m: HeaderModifier | undefined): JsonObject | undefined {
  if (!m) return undefined;
  const out: JsonObject = {};
  const add = headerMap(m.add);
  const set = headerMap(m.set);
  if (add) out.add = add;
  if (m.remove?.length) out.remove = [...m.remove];
  if (set) out.set = set;
  return out;
}

function redirect(r: NonNullable<RouteFilter['requestRedirect']>): JsonObject {
  const out: JsonObject = {};
  // 302 is the CRD's default (the API server fills it in; files get it here).
  out.redirectCode = r.statusCode ?? 302;
  if (r.hostname !== undefined) out.authority = r.hostname;
  if (r.scheme !== undefined) out.scheme = r.scheme;
  if (r.port !== undefined) out.port = r.port;
  else out.derivePort = r.scheme !== undefined ? 'FROM_PROTOCOL_DEFAULT' : 'FROM_REQUEST_PORT';
  if (r.path?.type === 'ReplaceFullPath' && r.path.replaceFullPath !== undefined) out.uri = r.path.replaceFullPath;
  if (r.path?.type === 'ReplacePrefixMatch' && r.path.replacePrefixMatch !== undefined) out.prefixRewrite = r.path.replacePrefixMatch;
  return out;
}

function rewrite(r: NonNullable<RouteFilter['urlRewrite']>): JsonObject | undefined {
  const out: JsonObject = {};
  if (r.path?.type === 'ReplacePrefixMatch' && r.path.replacePrefixMatch !== undefined)
    out.uri = r.path.replacePrefixMatch.replace(/\/$/, '') || '/';
  if (r.path?.type === 'ReplaceFullPath' && r.path.replaceFullPath !== undefined)
    out.uriRegexRewrite = { match: '/.*', rewrite: r.path.replaceFullPath };
  if (r.hostname !== undefined) out.authority = r.hostname;
  return Object.keys(out).length > 0 ? out : undefined;
}

function mirror(ctx: RuleContext, m: NonNullable<RouteFilter['requestMirror']>): Dest & { percentage?: number } {
  const d = buildDestination(ctx, m.backendRef);
  const pct = m.fraction ? (100 * m.fraction.numerator) / (m.fraction.denominator ?? 100) : m.percent;
  return pct !== undefined ? { ...d, percentage: pct } : d;
}

const stringMatch = (type: string | undefined, value: string): JsonObject =>
  type === 'RegularExpression' ? { regex: value } : { exact: value };

function matchHeaders(list: readonly { type?: string; name: string; value: string }[] | undefined): JsonObject | undefined {
  if (!list || list.length === 0) return undefined;
  return Object.fromEntries(list.map((h) => [h.name, stringMatch(h.type, h.value)]));
}

function httpMatch(m: HTTPRouteMatch): JsonObject {
  const type = m.path?.type ?? 'PathPrefix';
  let value = m.path?.value ?? '/';
  const out: JsonObject = {};
  if (type === 'PathPrefix') {
    if (value !== '/') value = value.replace(/\/$/, '');
    out.uri = { prefix: value };
  } else out.uri = type === 'Exact' ? { exact: value } : { regex: value };
  const headers = matchHeaders(m.headers);
  if (headers) out.headers = headers;
  const query = matchHeaders(m.queryParams);
  if (query) out.queryParams = query;
  if (m.method !== undefined) out.method = { exact: m.method };
  return out;
}

function grpcMatch(m: GRPCRouteMatch): JsonObject {
  const out: JsonObject = {};
  const method = m.method;
  if (method) {
    const regex = method.type === 'RegularExpression';
    if (method.method === undefined) out.uri = regex ? { regex: `/${method.service ?? ''}/.+` } : { prefix: `/${method.service ?? ''}/` };
    else if (method.service === undefined) out.uri = { regex: `/[^/]+/${method.method}` };
    else out.uri = regex ? { regex: `/${method.service}/${method.method}` } : { exact: `/${method.service}/${method.method}` };
  }
  const headers = matchHeaders(m.headers);
  if (headers) out.headers = headers;
  return out;
}

/** Weighted destinations (weight-0 backends dropped; a lone one gets weight 0 = all). */
function destinations(
  ctx: RuleContext,
  refs: readonly BackendRef[],
): { route: JsonObject[]; error?: ConditionError; hard?: ConditionError } {
  const active = refs.filter((b) => (b.weight ?? 1) !== 0);
  const route: JsonObject[] = [];
  let error: ConditionError | undefined;
  for (const b of active) {
    const d = buildDestination(ctx, b);
    if (d.hard) return { route: [], hard: d.error! };
    if (isInvalidBackend(d.error) || d.error) error = d.error;
    const rd: JsonObject = { destination: d.destination };
    const weight = active.length === 1 ? 0 : (b.weight ?? 1);
    if (weight !== 0) rd.weight = weight;
    const headers: JsonObject = {};
    for (const f of b.filters ?? []) {
      if (f.type === 'RequestHeaderModifier' && f.requestHeaderModifier) headers.request = headerOperations(f.requestHeaderModifier) ?? {};
      else if (f.type === 'ResponseHeaderModifier' && f.responseHeaderModifier)
        headers.response = headerOperations(f.responseHeaderModifier) ?? {};
      else return { route: [], hard: { reason: 'InvalidFilter', message: `unsupported filter type "${f.type}"` } };
    }
    if (Object.keys(headers).length > 0) rd.headers = headers;
    route.push(rd);
  }
  return { route, ...(error ? { error } : {}) };
}

const weightSum = (refs: readonly BackendRef[] | undefined): number => (refs ?? []).reduce((s, b) => s + (b.weight ?? 1), 0);

/** One HTTPRoute/GRPCRoute rule (with at most one match) → VirtualService HTTP route JSON. */
function convertRule(
  ctx: RuleContext,
  rule: HTTPRouteRule | GRPCRouteRule,
  index: number,
  match: JsonObject | undefined,
): { route?: JsonObject; error?: ConditionError } {
  const out: JsonObject = { name: rule.name ?? `${ctx.namespace}.${ctx.name}.${index}` };
  if (match) out.match = [match];
  let mirrorError: ConditionError | undefined;
  const headers: JsonObject = {};
  const mirrors: JsonObject[] = [];
  for (const f of rule.filters ?? []) {
    switch (f.type) {
      case 'RequestHeaderModifier': {
        const h = headerOperations(f.requestHeaderModifier);
        if (h) headers.request = h;
        break;
      }
      case 'ResponseHeaderModifier': {
        const h = headerOperations(f.responseHeaderModifier);
        if (h) headers.response = h;
        break;
      }
      case 'RequestRedirect':
        if (ctx.routeKind === 'GRPCRoute') return { error: { reason: 'InvalidFilter', message: `unsupported filter type "${f.type}"` } };
        if (f.requestRedirect) out.redirect = redirect(f.requestRedirect);
        break;
      case 'RequestMirror': {
        if (!f.requestMirror) break;
        const m = mirror(ctx, f.requestMirror);
        if (m.error) {
          if (ctx.routeKind === 'GRPCRoute') return { error: m.error };
          mirrorError = m.error;
        } else mirrors.push({ destination: m.destination, ...(m.percentage !== undefined ? { percentage: { value: m.percentage } } : {}) });
        break;
      }
      case 'URLRewrite': {
        if (ctx.routeKind === 'GRPCRoute') return { error: { reason: 'InvalidFilter', message: `unsupported filter type "${f.type}"` } };
        const r = f.urlRewrite && rewrite(f.urlRewrite);
        if (r) out.rewrite = r;
        break;
      }
      case 'CORS':
        // CORS maps to a corsPolicy istiod writes; not translated here yet.
        break;
      default:
        return { error: { reason: 'InvalidFilter', message: `unsupported filter type "${f.type}"` } };
    }
  }
  if (Object.keys(headers).length > 0) out.headers = headers;
  if (mirrors.length > 0) out.mirrors = mirrors;
  const http = rule as HTTPRouteRule;
  if (ctx.routeKind === 'HTTPRoute' && http.retry) {
    const retryOn = ['connect-failure', 'refused-stream', 'unavailable', 'cancelled', ...(http.retry.codes ?? []).map(String)];
    const attempts = http.retry.attempts ?? 2;
    const retries: JsonObject = { attempts, ...(attempts !== 0 ? { retryOn: retryOn.join(',') } : {}) };
    const backoff = http.retry.backoff !== undefined ? gatewayApiDuration(http.retry.backoff) : undefined;
    if (backoff !== undefined) retries.backoff = backoff;
    out.retries = retries;
  }
  if (ctx.routeKind === 'HTTPRoute' && http.timeouts) {
    const request = http.timeouts.request !== undefined ? gatewayApiDuration(http.timeouts.request) : undefined;
    if (request !== undefined && request !== '0s') out.timeout = request;
    const backend = http.timeouts.backendRequest !== undefined ? gatewayApiDuration(http.timeouts.backendRequest) : undefined;
    if (backend !== undefined && backend !== '0s') {
      if (out.retries) (out.retries as JsonObject).perTryTimeout = backend;
      else out.timeout = backend;
    }
  }
  if (weightSum(rule.backendRefs) === 0 && out.redirect === undefined) {
    out.directResponse = { status: 500 };
    return { route: out, ...(mirrorError ? { error: mirrorError } : {}) };
  }
  const d = destinations(ctx, rule.backendRefs ?? []);
  if (d.hard) return { error: d.hard };
  if (d.route.length > 0 || rule.backendRefs !== undefined) out.route = d.route;
  const error = joinErrors(d.error, mirrorError);
  return { route: out, ...(error ? { error } : {}) };
}

/** Every rule of an HTTPRoute or GRPCRoute, split so that each route has at most one match. */
export function convertHttpRules(ctx: RuleContext, rules: readonly (HTTPRouteRule | GRPCRouteRule)[]): Converted<JsonObject> {
  const routes: JsonObject[] = [];
  let error: ConditionError | undefined;
  for (const [n, rule] of rules.entries()) {
    const matches: (JsonObject | undefined)[] =
      ctx.routeKind === 'GRPCRoute'
        ? ((rule as GRPCRouteRule).matches ?? []).map((m) => {
            const j = grpcMatch(m);
            return Object.keys(j).length > 0 ? j : {};
          })
        : // The CRD defaults an HTTPRoute rule's matches to one PathPrefix `/` (the API server fills it in; files get it here).
          ((rule as HTTPRouteRule).matches ?? [{ path: { type: 'PathPrefix', value: '/' } }]).map(httpMatch);
    for (const m of matches.length > 0 ? matches : [undefined]) {
      const r = convertRule(ctx, rule, n, m);
      if (!r.route) return { routes: undefined, error: r.error };
      if (r.error) error = r.error;
      routes.push(r.route);
    }
  }
  return { routes, error };
}

/** TCPRoute/TLSRoute rules: weighted destinations; no usable backend → a zero-weight black hole. */
export function convertL4Rules(
  ctx: RuleContext,
  rules: readonly L4RouteRule[],
  sniHosts: readonly string[] | undefined,
): Converted<JsonObject> {
  const routes: JsonObject[] = [];
  let error: ConditionError | undefined;
  for (const rule of rules) {
    const match = sniHosts ? { match: [{ sniHosts: sniHosts.length > 0 ? [...sniHosts] : ['*'] }] } : {};
    if (weightSum(rule.backendRefs) === 0) {
      routes.push({
        ...match,
        route: [{ destination: { host: 'internal.cluster.local', subset: 'zero-weight', port: { number: 65535 } } }],
      });
      continue;
    }
    const d = destinations(ctx, rule.backendRefs ?? []);
    if (d.hard) return { routes: undefined, error: d.hard };
    if (d.error) error = d.error;
    routes.push({ ...match, route: d.route.map(({ headers: _, ...rd }) => rd) });
  }
  return { routes, error };
}
