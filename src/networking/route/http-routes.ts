import type { Any } from '@bufbuild/protobuf/wkt';
import { type Config, resolveShortName } from '../../config/index.js';
import {
  RedirectAction_RedirectResponseCode,
  RouteAction_ClusterNotFoundResponseCode,
  type RouteSchema,
} from '../../gen/envoy/config/route/v3/route_components_pb.js';
import {
  HTTPRedirect_RedirectPortSelection,
  type Destination,
  type HTTPRedirect,
  type HTTPRoute,
  type HTTPRouteDestination,
} from '../../gen/networking/v1alpha3/virtual_service_pb.js';
import { MESH_GATEWAY, isProxyless, type Proxy, type PushContext, buildClusterName } from '../../model/index.js';
import type { Service } from '../../registry/index.js';
import { fractionalPercent, type Init } from '../common.js';
import { effectiveTrafficPolicy } from '../traffic-policy.js';
import { CORS_FILTER, corsPerRouteConfig } from './cors.js';
import { faultConfig, FAULT_FILTER, hashPolicy, headerMutations, retryPolicy, timeouts, type HeaderMutations } from './route-action.js';
import { matchApplies, translateRouteMatch, type HeaderMatchStyle, type MatchContext } from './route-match.js';

export type RouteInit = Init<typeof RouteSchema>;

export interface RouteBuildContext {
  readonly push: PushContext;
  readonly proxy: Proxy;
  /** The service the routes are for and the port the caller dialled. */
  readonly service: Service;
  readonly port: number;
  readonly headerStyle: HeaderMatchStyle;
}

/** The routes for one service port: its VirtualService's HTTP rules, or the default route. */
export function buildHttpRoutes(ctx: RouteBuildContext): RouteInit[] {
  const vs = ctx.push.virtualService(ctx.service.hostname, ctx.proxy.namespace);
  if (!vs) return [defaultRoute(ctx)];
  return routesForVirtualService(ctx, vs, MESH_GATEWAY);
}

/** What route building needs besides the VirtualService: who asks, on which port, in which spelling. */
export type VirtualServiceRouteContext = Omit<RouteBuildContext, 'service'> & {
  /** The server terminates TLS (a redirect then defaults to https). */
  readonly tls?: boolean;
};

/** VirtualServices made from Gateway API routes (istiod's UseGatewaySemantics). */
export const isGatewaySemantics = (vs: Config<'VirtualService'>): boolean =>
  vs.meta.annotations['internal.istio.io/route-semantics'] === 'gateway';

/**
 * A VirtualService's HTTP rules as Envoy routes for proxies of `gateway` (`mesh` for sidecars and
 * proxyless clients, `<ns>/<name>` for gateways): matches that target another port, source or
 * gateway are dropped; a catch-all rule ends the list as it shadows every later one.
 */
export function routesForVirtualService(ctx: VirtualServiceRouteContext, vs: Config<'VirtualService'>, gateway: string): RouteInit[] {
  const mctx: MatchContext = { port: ctx.port, namespace: ctx.proxy.namespace, labels: ctx.proxy.labels, gateway };
  // Gateway API semantics for gateways (path-separated prefixes, 500 for unknown backends); GAMMA's
  // mesh routes keep the plain forms, which proxyless gRPC clients also accept.
  const semantics = gateway !== MESH_GATEWAY && isGatewaySemantics(vs);
  const out: RouteInit[] = [];
  for (const rule of vs.spec.http) {
    const matches = rule.match.filter((m) => matchApplies(m, mctx));
    if (rule.match.length > 0 && matches.length === 0) continue; // every match targets another port/source
    if (matches.length === 0) {
      const base = routeBody(ctx, vs, rule, semantics, undefined);
      if (!base) continue;
      out.push(withOperation({ ...base, match: translateRouteMatch(undefined, ctx.headerStyle) }, vs.meta.name, ctx.port));
      break; // a catch-all shadows every later rule
    }
    let catchAll = false;
    for (const m of matches) {
      const match = translateRouteMatch(m, ctx.headerStyle, semantics);
      const base = routeBody(
        ctx,
        vs,
        rule,
        semantics,
        match.pathSpecifier?.case === 'pathSeparatedPrefix' ? match.pathSpecifier.value : undefined,
      );
      if (!base) continue;
      out.push(
        withOperation(
          { ...base, match, ...(m.name ? { name: `${base.name ?? ''}${base.name ? '.' : ''}${m.name}` } : {}) },
          vs.meta.name,
          ctx.port,
        ),
      );
      // istiod's IsCatchAllRoute: nothing after a match-everything route can match.
      if (isCatchAll(match)) {
        catchAll = true;
        break;
      }
    }
    if (catchAll) break;
  }
  return out;
}

/**
 * istiod's GetRouteOperation, the route's span name: `<host>:<port><path>` when it sends to one
 * service cluster, else `<VirtualService>:<listener port><path>`; the path is the prefix + `*`,
 * the exact path or the regex (`/*` otherwise).
 */
function withOperation(r: RouteInit, vsName: string, listenerPort: number): RouteInit {
  const p = r.match?.pathSpecifier;
  const path = p?.case === 'prefix' ? `${p.value}*` : p?.case === 'path' ? p.value : p?.case === 'safeRegex' ? (p.value.regex ?? '') : '/*';
  const a = r.action?.case === 'route' ? r.action.value.clusterSpecifier : undefined;
  const parts = a?.case === 'cluster' ? a.value.split('|') : [];
  const operation = parts.length === 4 && parts[3] !== '' ? `${parts[3]}:${parts[1]}${path}` : `${vsName}:${listenerPort}${path}`;
  return { ...r, decorator: { operation } };
}

function defaultRoute(ctx: RouteBuildContext): RouteInit {
  const cluster = buildClusterName('outbound', ctx.port, '', ctx.service.hostname);
  const policy = effectiveTrafficPolicy(ctx.push, ctx.proxy, ctx.service, ctx.port, '');
  return {
    name: 'default',
    match: { pathSpecifier: { case: 'prefix', value: '/' } },
    decorator: { operation: `${ctx.service.hostname}:${ctx.port}/*` },
    action: {
      case: 'route',
      value: {
        clusterSpecifier: { case: 'cluster', value: cluster },
        ...timeouts(undefined, isProxyless(ctx.proxy)),
        retryPolicy: retryPolicy(undefined),
        hashPolicy: hashPolicy(policy?.loadBalancer),
      },
    },
  };
}

interface ResolvedDestination {
  readonly cluster: string;
  readonly service: Service | undefined;
  readonly port: number;
  readonly subset: string;
}

function resolveDestination(ctx: VirtualServiceRouteContext, vs: Config<'VirtualService'>, d: Destination): ResolvedDestination {
  // Only an invalid Gateway API backendRef has no host (istiod's GetDestinationCluster).
  if (d.host === '') return { cluster: 'UnknownService', service: undefined, port: 0, subset: '' };
  const host = resolveShortName(d.host, vs.meta.namespace, ctx.push.mesh.domain);
  const service = ctx.push.service(host, ctx.proxy.namespace);
  let port = d.port?.number ?? 0;
  if (port === 0) {
    if (service && service.ports.length === 1) port = service.ports[0]!.port;
    else port = ctx.port;
  }
  return { cluster: buildClusterName('outbound', port, d.subset, host), service, port, subset: d.subset };
}

/** Everything of a route except its match. Undefined when the rule has no usable action. */
function routeBody(
  ctx: VirtualServiceRouteContext,
  vs: Config<'VirtualService'>,
  rule: HTTPRoute,
  gatewaySemantics = false,
  separatedPrefix?: string,
): Omit<RouteInit, 'match'> | undefined {
  const req = headerMutations(rule.headers?.request);
  const res = headerMutations(rule.headers?.response);
  const typedPerFilterConfig: Record<string, Any> = {};
  const fault = faultConfig(rule.fault);
  if (fault) typedPerFilterConfig[FAULT_FILTER] = fault;
  // Proxyless gRPC has no CORS filter and would reject a config for one.
  const cors = isProxyless(ctx.proxy) ? undefined : corsPerRouteConfig(rule.corsPolicy);
  if (cors) typedPerFilterConfig[CORS_FILTER] = cors;
  const common = {
    ...(rule.name ? { name: rule.name } : {}),
    // Which VirtualService made the route (istiod's route metadata; istioctl's VIRTUAL SERVICE column).
    metadata: {
      filterMetadata: { istio: { config: `/apis/networking.istio.io/v1/namespaces/${vs.meta.namespace}/virtual-service/${vs.meta.name}` } },
    },
    ...(Object.keys(typedPerFilterConfig).length > 0 ? { typedPerFilterConfig } : {}),
    ...(req.add.length > 0 ? { requestHeadersToAdd: req.add } : {}),
    ...(req.remove.length > 0 ? { requestHeadersToRemove: req.remove } : {}),
    ...(res.add.length > 0 ? { responseHeadersToAdd: res.add } : {}),
    ...(res.remove.length > 0 ? { responseHeadersToRemove: res.remove } : {}),
  };

  if (rule.redirect) {
    const r = rule.redirect;
    return {
      ...common,
      action: {
        case: 'redirect',
        value: {
          ...(r.authority ? { hostRedirect: r.authority } : {}),
          pathRewriteSpecifier:
            r.prefixRewrite !== ''
              ? { case: 'prefixRewrite' as const, value: r.prefixRewrite }
              : { case: 'pathRedirect' as const, value: r.uri },
          ...(r.scheme ? { schemeRewriteSpecifier: { case: 'schemeRedirect', value: r.scheme } } : {}),
          ...redirectPort(r, ctx.port, ctx.tls === true),
          responseCode: redirectCode(r.redirectCode),
        },
      },
    };
  }
  if (rule.directResponse) {
    const body = rule.directResponse.body?.specifier;
    return {
      ...common,
      action: {
        case: 'directResponse',
        value: {
          status: rule.directResponse.status,
          ...(body?.case === 'string' ? { body: { specifier: { case: 'inlineString', value: body.value } } } : {}),
          ...(body?.case === 'bytes' ? { body: { specifier: { case: 'inlineBytes', value: body.value } } } : {}),
        },
      },
    };
  }
  if (rule.route.length === 0) return undefined;

  const dests = rule.route.map((rd) => ({ rd, dest: rd.destination ? resolveDestination(ctx, vs, rd.destination) : undefined }));
  const weighted = dests.filter((x) => x.dest && (dests.length === 1 || x.rd.weight > 0));
  if (weighted.length === 0) return undefined;
  const first = weighted[0]!.dest!;
  // istiod takes the hash policy of the first destination whose traffic policy has one.
  const hash =
    weighted
      .map((x) => x.dest!)
      .map((d) =>
        hashPolicy(d.service ? effectiveTrafficPolicy(ctx.push, ctx.proxy, d.service, d.port, d.subset)?.loadBalancer : undefined),
      )
      .find((h) => h.length > 0) ?? [];
  // istiod's MirrorPercent(ByPolicy): a percentage in millionths, a legacy integer percent or the
  // 100% default in hundredths; an explicit 0 mirrors nothing.
  const hundred = (n: number): { numerator: number } => ({ numerator: n });
  const mirrors = [
    ...rule.mirrors.map((m) => ({
      d: m.destination,
      pct: m.percentage ? fractionalPercent(m.percentage.value) : hundred(100),
      off: m.percentage?.value === 0,
    })),
    ...(rule.mirror
      ? [
          rule.mirrorPercentage
            ? { d: rule.mirror, pct: fractionalPercent(rule.mirrorPercentage.value), off: rule.mirrorPercentage.value === 0 }
            : { d: rule.mirror, pct: hundred(rule.mirrorPercent ?? 100), off: rule.mirrorPercent === 0 },
        ]
      : []),
  ];
  const rewrite = rule.rewrite;
  // A destination's own header operations: on its weighted cluster, or (one destination) after the rule's.
  const single = weighted.length === 1 ? destinationHeaders(weighted[0]!.rd) : undefined;
  return {
    ...common,
    ...(single ? appendHeaders(common, single) : {}),
    action: {
      case: 'route',
      value: {
        clusterSpecifier:
          weighted.length === 1
            ? { case: 'cluster', value: first.cluster }
            : {
                case: 'weightedClusters',
                value: { clusters: weighted.map((x) => ({ name: x.dest!.cluster, weight: x.rd.weight, ...destinationHeaders(x.rd) })) },
              },
        ...timeouts(rule.timeout, isProxyless(ctx.proxy)),
        ...(retryPolicy(rule.retries) ? { retryPolicy: retryPolicy(rule.retries) } : {}),
        hashPolicy: hash,
        ...(gatewaySemantics ? { clusterNotFoundResponseCode: RouteAction_ClusterNotFoundResponseCode.INTERNAL_SERVER_ERROR } : {}),
        ...(rewrite?.uri && !(gatewaySemantics && rewrite.uri === '/' && !rewrite.uriRegexRewrite) ? { prefixRewrite: rewrite.uri } : {}),
        // Gateway API's "replace the prefix with /": strip it, keeping one `/` (istiod's regex).
        ...(gatewaySemantics && rewrite?.uri === '/' && !rewrite.uriRegexRewrite
          ? { regexRewrite: { pattern: { regex: `^${escapeRegex(separatedPrefix ?? '')}(/?)(.*)` }, substitution: '/\\2' } }
          : {}),
        ...(rewrite?.uriRegexRewrite
          ? { regexRewrite: { pattern: { regex: rewrite.uriRegexRewrite.match }, substitution: rewrite.uriRegexRewrite.rewrite } }
          : {}),
        ...(rewrite?.authority ? { hostRewriteSpecifier: { case: 'hostRewriteLiteral', value: rewrite.authority } } : {}),
        requestMirrorPolicies: mirrors
          .filter((m) => m.d && !m.off)
          .map((m) => ({
            cluster: resolveDestination(ctx, vs, m.d!).cluster,
            runtimeFraction: { defaultValue: m.pct },
            traceSampled: false,
            // istiod's DISABLE_SHADOW_HOST_SUFFIX default: the mirrored request keeps its Host.
            disableShadowHostSuffixAppend: true,
          })),
      },
    },
  };
}

/** A destination's header operations as route (or weighted-cluster) fields; none when it has none. */
type HeaderFields = Partial<
  Record<'requestHeadersToAdd' | 'responseHeadersToAdd', HeaderMutations['add']> &
    Record<'requestHeadersToRemove' | 'responseHeadersToRemove', string[]>
>;

function destinationHeaders(rd: HTTPRouteDestination): HeaderFields {
  const req = headerMutations(rd.headers?.request);
  const res = headerMutations(rd.headers?.response);
  return {
    ...(req.add.length > 0 ? { requestHeadersToAdd: req.add } : {}),
    ...(req.remove.length > 0 ? { requestHeadersToRemove: req.remove } : {}),
    ...(res.add.length > 0 ? { responseHeadersToAdd: res.add } : {}),
    ...(res.remove.length > 0 ? { responseHeadersToRemove: res.remove } : {}),
  };
}

/** `more`'s header operations after `base`'s (istiod's processDestination appends them). */
function appendHeaders(base: HeaderFields, more: HeaderFields): HeaderFields {
  const out: Record<string, unknown[]> = {};
  for (const k of ['requestHeadersToAdd', 'requestHeadersToRemove', 'responseHeadersToAdd', 'responseHeadersToRemove'] as const) {
    const all = [...(base[k] ?? []), ...(more[k] ?? [])];
    if (all.length > 0) out[k] = all;
  }
  return out as HeaderFields;
}

/** A route match that matches every request: path `/` (prefix or path-separated) or regex `.*`, nothing else. */
function isCatchAll(m: ReturnType<typeof translateRouteMatch>): boolean {
  const p = m.pathSpecifier;
  const all =
    (p?.case === 'prefix' && p.value === '/') ||
    (p?.case === 'pathSeparatedPrefix' && p.value === '/') ||
    (p?.case === 'safeRegex' && p.value.regex === '.*');
  return all && (m.headers ?? []).length === 0 && (m.queryParameters ?? []).length === 0 && (m.dynamicMetadata ?? []).length === 0;
}

const escapeRegex = (v: string): string => v.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** istiod's ApplyRedirect port: a fixed port or the request's (the listener port); never :80 for http or :443 for https. */
function redirectPort(r: HTTPRedirect, listenerPort: number, tls: boolean): { portRedirect?: number } {
  let port = 0;
  if (r.redirectPort.case === 'port') port = r.redirectPort.value;
  else if (r.redirectPort.case === 'derivePort' && r.redirectPort.value === HTTPRedirect_RedirectPortSelection.FROM_REQUEST_PORT)
    port = listenerPort;
  else if (r.redirectPort.case === undefined) return {};
  const scheme = r.scheme !== '' ? r.scheme : tls ? 'https' : 'http';
  if ((port === 80 && scheme === 'http') || (port === 443 && scheme === 'https')) port = 0;
  return port !== 0 ? { portRedirect: port } : {};
}

function redirectCode(code: number): RedirectAction_RedirectResponseCode {
  switch (code) {
    case 302:
      return RedirectAction_RedirectResponseCode.FOUND;
    case 303:
      return RedirectAction_RedirectResponseCode.SEE_OTHER;
    case 307:
      return RedirectAction_RedirectResponseCode.TEMPORARY_REDIRECT;
    case 308:
      return RedirectAction_RedirectResponseCode.PERMANENT_REDIRECT;
    default:
      return RedirectAction_RedirectResponseCode.MOVED_PERMANENTLY;
  }
}
