/** Semantic checks for VirtualService, as istiod's validation webhook makes them. */
import { isGrpcStatusName } from '../../util/grpc-status.js';
import type {
  Destination,
  HTTPFaultInjection,
  HTTPMatchRequest,
  HTTPRedirect,
  HTTPRetry,
  HTTPRewrite,
  HTTPRoute,
  HTTPRouteDestination,
  RouteDestination,
  VirtualService,
  CorsPolicy,
  L4MatchAttributes,
  TLSMatchAttributes,
} from '../../gen/networking/v1alpha3/virtual_service_pb.js';
import {
  checkDuration,
  checkDurationField,
  checkExportTo,
  checkFQDN,
  checkHeaderName,
  checkHeaderOperations,
  checkIPSubnet,
  checkLabels,
  checkPercent,
  checkPercentage,
  checkPort,
  checkRegex,
  checkStringMatch,
  checkWildcardDomain,
  hostsOverlap,
  isAuthorityHeader,
  isDns1123Label,
  isIPAddress,
  isJwtClaimRoute,
} from './common.js';
import { field, index, key, type Issues } from './issues.js';
import type { ObjectContext } from './context.js';

const MESH_GATEWAY = 'mesh';

export function validateVirtualService(vs: VirtualService, ctx: ObjectContext, issues: Issues): void {
  const spec = 'spec';
  const isDelegate = vs.hosts.length === 0;
  if (isDelegate) {
    // A VirtualService without hosts is a delegate: only HTTP routes, no gateways.
    if (vs.gateways.length > 0) issues.add(field(spec, 'gateways'), 'delegate virtual service must have no gateways specified');
    if (vs.tls.length > 0) issues.add(field(spec, 'tls'), 'delegate virtual service must have no tls route specified');
    if (vs.tcp.length > 0) issues.add(field(spec, 'tcp'), 'delegate virtual service must have no tcp route specified');
  }
  checkGatewayNames(issues, field(spec, 'gateways'), vs.gateways);
  // Bound to gateways only (and not to "mesh"): IP hosts are allowed, `*` is allowed.
  const appliesToGateway = vs.gateways.length > 0 && !vs.gateways.includes(MESH_GATEWAY);
  const appliesToMesh = !appliesToGateway;

  if (!appliesToGateway) {
    vs.http.forEach((h, i) =>
      h.match.forEach((m, j) => {
        for (const map of ['headers', 'withoutHeaders'] as const) {
          for (const name of Object.keys(m[map])) {
            if (isJwtClaimRoute(name)) {
              issues.add(
                key(field(index(field(index(field(spec, 'http'), i), 'match'), j), map), name),
                `JWT claim based routing (key: ${name}) is only supported for gateway, found no gateways: [${vs.gateways.join(', ')}]`,
              );
            }
          }
        }
      }),
    );
  }

  let allHostsValid = true;
  vs.hosts.forEach((host, i) => {
    const p = index(field(spec, 'hosts'), i);
    const err = checkWildcardDomain(host);
    if (err) {
      if (!(appliesToGateway && isIPAddress(host))) {
        issues.add(p, err);
        allHostsValid = false;
      }
    } else if (appliesToMesh && host === '*') {
      issues.add(p, 'wildcard host * is not allowed for virtual services bound to the mesh gateway');
      allHostsValid = false;
    }
  });
  if (allHostsValid) {
    for (let i = 0; i < vs.hosts.length; i++) {
      for (let j = i + 1; j < vs.hosts.length; j++) {
        const a = vs.hosts[i] ?? '';
        const b = vs.hosts[j] ?? '';
        if (hostsOverlap(a, b)) issues.add(index(field(spec, 'hosts'), j), `duplicate hosts in virtual service: ${a} & ${b}`);
      }
    }
  }

  if (vs.http.length === 0 && vs.tcp.length === 0 && vs.tls.length === 0) {
    issues.add(spec, 'http, tcp or tls must be provided in virtual service');
  }
  vs.http.forEach((h, i) => validateHTTPRoute(issues, index(field(spec, 'http'), i), h, isDelegate));
  vs.tls.forEach((t, i) => {
    const p = index(field(spec, 'tls'), i);
    if (t.match.length === 0) issues.add(field(p, 'match'), 'TLS route must have at least one match condition');
    t.match.forEach((m, j) => validateTLSMatch(issues, index(field(p, 'match'), j), m, vs, appliesToGateway));
    if (t.route.length === 0) issues.add(field(p, 'route'), 'TLS route is required');
    validateRouteDestinations(issues, field(p, 'route'), t.route);
  });
  vs.tcp.forEach((t, i) => {
    const p = index(field(spec, 'tcp'), i);
    t.match.forEach((m, j) => validateL4Match(issues, index(field(p, 'match'), j), m));
    if (t.route.length === 0) issues.add(field(p, 'route'), 'TCP route is required');
    validateRouteDestinations(issues, field(p, 'route'), t.route);
  });
  checkExportTo(issues, field(spec, 'exportTo'), ctx.namespace, vs.exportTo, false);
}

/** Gateway references: `namespace/name` (both DNS labels), or a legacy bare/FQDN name such as `mesh`. */
export function checkGatewayNames(issues: Issues, path: string, names: readonly string[]): void {
  names.forEach((name, i) => {
    const p = index(path, i);
    const slash = name.indexOf('/');
    if (slash < 0) {
      if (name.includes('.')) {
        const parts = name.split('.');
        const recommended = `${parts[1] ?? ''}/${parts[0] ?? ''}`;
        issues.warn(
          p,
          `using legacy gatewayName format ${JSON.stringify(name)}; prefer the <namespace>/<name> format: ${JSON.stringify(recommended)}`,
        );
      }
      issues.check(p, checkFQDN(name));
      return;
    }
    const ns = name.slice(0, slash);
    const gw = name.slice(slash + 1);
    if (ns === '' || gw === '') issues.add(p, 'config namespace and gateway name cannot be empty');
    else {
      if (!isDns1123Label(ns)) issues.add(p, `invalid value for namespace: "${ns}"`);
      if (!isDns1123Label(gw)) issues.add(p, `invalid value for gateway name: "${gw}"`);
    }
  });
}

function validateHTTPRoute(issues: Issues, path: string, h: HTTPRoute, inDelegate: boolean): void {
  const isRoot = !inDelegate && h.delegate !== undefined;
  if (isRoot) {
    // A root route hands matching requests to the delegate VirtualService and may do nothing else.
    if (h.redirect) issues.add(field(path, 'redirect'), `root HTTP route ${h.name} must not specify redirect`);
    if (h.route.length > 0) issues.add(field(path, 'route'), `root HTTP route ${h.name} must not specify route`);
    if (h.delegate && h.delegate.name === '') issues.add(field(field(path, 'delegate'), 'name'), 'delegate name is required');
  } else {
    if (inDelegate && h.delegate) issues.add(field(path, 'delegate'), 'delegate HTTP route cannot contain delegate');
    const hasRoute = h.route.length > 0;
    if (h.redirect) {
      if (hasRoute) issues.add(path, 'HTTP route cannot contain both route and redirect');
      if (h.fault) issues.add(path, 'HTTP route cannot contain both fault and redirect');
      if (h.rewrite) issues.add(path, 'HTTP route rule cannot contain both rewrite and redirect');
      if (h.directResponse) issues.add(path, 'HTTP route rule cannot contain both direct_response and redirect');
    } else if (h.directResponse) {
      if (hasRoute) issues.add(path, 'HTTP route cannot contain both route and direct_response');
      if (h.fault) issues.add(path, 'HTTP route cannot contain both fault and direct_response');
      if (h.rewrite) issues.add(path, 'HTTP route rule cannot contain both rewrite and direct_response');
    } else if (!hasRoute) {
      issues.add(path, 'HTTP route, redirect or direct_response is required');
    }
  }
  if (h.mirror && h.mirrors.length > 0) issues.add(path, 'HTTP route cannot contain both mirror and mirrors');

  h.match.forEach((m, i) => validateHTTPMatch(issues, index(field(path, 'match'), i), m));
  checkHeaderOperations(issues, field(field(path, 'headers'), 'request'), h.headers?.request, true);
  checkHeaderOperations(issues, field(field(path, 'headers'), 'response'), h.headers?.response, false);
  validateCors(issues, field(path, 'corsPolicy'), h.corsPolicy);
  validateFault(issues, field(path, 'fault'), h.fault);

  if (h.mirrorPercent !== undefined) {
    const p = field(path, 'mirrorPercent');
    if (h.mirrorPercent > 100) issues.add(p, `mirror_percent must have a max value of 100 (it has ${h.mirrorPercent})`);
    issues.warn(p, 'using deprecated setting "mirrorPercent", use "mirrorPercentage" instead');
  }
  if (h.mirrorPercentage) {
    const v = h.mirrorPercentage.value;
    if (v > 100) issues.add(field(path, 'mirrorPercentage'), `mirror_percentage must have a max value of 100 (it has ${v})`);
    if (v < 0) issues.add(field(path, 'mirrorPercentage'), `mirror_percentage must have a min value of 0 (it has ${v})`);
  }
  validateDestination(issues, field(path, 'mirror'), h.mirror);
  h.mirrors.forEach((m, i) => {
    const p = index(field(path, 'mirrors'), i);
    if (!m.destination) issues.add(field(p, 'destination'), 'destination is required for mirrors');
    else validateDestination(issues, field(p, 'destination'), m.destination);
    if (m.percentage) {
      const v = m.percentage.value;
      if (v < 0 || v > 100) issues.add(field(p, 'percentage'), `mirror percentage must be in range 0..100 (it has ${v})`);
    }
  });
  validateRedirect(issues, field(path, 'redirect'), h.redirect);
  if (h.directResponse) {
    const p = field(path, 'directResponse');
    issues.check(field(p, 'status'), checkHTTPStatus(h.directResponse.status));
    const body = h.directResponse.body?.specifier;
    const size = body?.case === 'string' ? Buffer.byteLength(body.value) : body?.case === 'bytes' ? body.value.length : 0;
    if (size > 1024 * 1024)
      issues.add(field(p, 'body'), 'large direct_responses may impact control plane performance, must be less than 1MB');
    else if (size > 100 * 1024) issues.warn(field(p, 'body'), 'large direct_responses may impact control plane performance');
  }
  validateRetry(issues, field(path, 'retries'), h.retries);
  validateRewrite(issues, field(path, 'rewrite'), h.rewrite);
  validateAuthorityRewrite(issues, path, h);
  validateHTTPRouteDestinations(issues, field(path, 'route'), h.route);
  checkDurationField(issues, field(path, 'timeout'), h.timeout);
}

function validateHTTPMatch(issues: Issues, path: string, m: HTTPMatchRequest): void {
  for (const [name, sm] of Object.entries(m.headers)) {
    const p = key(field(path, 'headers'), name);
    issues.check(p, checkHeaderName(name, true));
    checkStringMatch(issues, p, sm);
  }
  for (const [name, sm] of Object.entries(m.withoutHeaders)) {
    const p = key(field(path, 'withoutHeaders'), name);
    issues.check(p, checkHeaderName(name, true));
    // `regex: "*"` is not a regex here: Istio turns it into a presence match.
    if (!(sm.matchType.case === 'regex' && sm.matchType.value === '*')) checkStringMatch(issues, p, sm);
  }
  // Envoy allows an empty uri prefix (match everything) but not an empty scheme/method/authority one.
  checkStringMatch(issues, field(path, 'uri'), m.uri, true);
  checkStringMatch(issues, field(path, 'scheme'), m.scheme);
  checkStringMatch(issues, field(path, 'method'), m.method);
  checkStringMatch(issues, field(path, 'authority'), m.authority);
  for (const [name, sm] of Object.entries(m.queryParams)) checkStringMatch(issues, key(field(path, 'queryParams'), name), sm);
  if (m.port !== 0) issues.check(field(path, 'port'), checkPort(m.port));
  checkLabels(issues, field(path, 'sourceLabels'), m.sourceLabels);
  checkGatewayNames(issues, field(path, 'gateways'), m.gateways);
  if (m.sourceNamespace !== '' && !isDns1123Label(m.sourceNamespace)) {
    issues.add(field(path, 'sourceNamespace'), `sourceNamespace match ${m.sourceNamespace} is invalid`);
  }
}

function validateL4Match(issues: Issues, path: string, m: L4MatchAttributes | TLSMatchAttributes): void {
  m.destinationSubnets.forEach((s, i) => issues.check(index(field(path, 'destinationSubnets'), i), checkIPSubnet(s)));
  if (m.port !== 0) issues.check(field(path, 'port'), checkPort(m.port));
  checkLabels(issues, field(path, 'sourceLabels'), m.sourceLabels);
  checkGatewayNames(issues, field(path, 'gateways'), m.gateways);
}

function validateTLSMatch(issues: Issues, path: string, m: TLSMatchAttributes, vs: VirtualService, appliesToGateway: boolean): void {
  if (m.sniHosts.length === 0) issues.add(field(path, 'sniHosts'), 'TLS match must have at least one SNI host');
  m.sniHosts.forEach((sni, i) => {
    const p = index(field(path, 'sniHosts'), i);
    // Gateways may route auto-generated `outbound_.<port>_._.<host>` SNI names.
    const generated = appliesToGateway && sni.startsWith('outbound_.') && /^outbound_\.[0-8]/.test(sni);
    const err = generated ? undefined : checkWildcardDomain(sni);
    if (err) {
      if (!isIPAddress(sni)) issues.add(p, err);
      else issues.warn(p, `using an IP address (${JSON.stringify(sni)}) goes against SNI spec and most clients do not support this`);
      return;
    }
    if (!vs.hosts.some((h) => sniSubsetOf(sni, h))) {
      issues.add(p, `SNI host "${sni}" is not a compatible subset of any of the virtual service hosts: [${vs.hosts.join(', ')}]`);
    }
  });
  validateL4Match(issues, path, m);
}

/** istio host.Name.SubsetOf: every name that `a` matches is also matched by `b`. */
function sniSubsetOf(a: string, b: string): boolean {
  const aw = a.startsWith('*');
  const bw = b.startsWith('*');
  if (aw) return bw && a.slice(1).endsWith(b.slice(1));
  if (bw) return a.endsWith(b.slice(1));
  return a === b;
}

function validateDestination(issues: Issues, path: string, d: Destination | undefined): void {
  if (!d) return;
  if (d.host === '*') issues.add(field(path, 'host'), `invalid destination host ${d.host}`);
  else issues.check(field(path, 'host'), checkWildcardDomain(d.host));
  if (d.subset !== '' && !isDns1123Label(d.subset)) issues.add(field(path, 'subset'), `subset name is invalid: ${d.subset}`);
  if (d.port) issues.check(field(field(path, 'port'), 'number'), checkPort(d.port.number));
}

/**
 * Weights are relative since Istio 1.15 (istio/istio#39544): any non-negative values work,
 * but several destinations that all weigh 0 would receive nothing.
 */
function checkWeights(issues: Issues, path: string, dests: readonly (HTTPRouteDestination | RouteDestination)[]): void {
  let total = 0;
  dests.forEach((d, i) => {
    const p = index(path, i);
    if (!d.destination) issues.add(field(p, 'destination'), 'destination is required');
    else validateDestination(issues, field(p, 'destination'), d.destination);
    if (d.weight < 0) issues.add(field(p, 'weight'), `weight ${d.weight} < 0`);
    total += d.weight;
  });
  if (dests.length > 1 && total === 0) issues.add(path, 'total destination weight = 0');
}

function validateHTTPRouteDestinations(issues: Issues, path: string, dests: readonly HTTPRouteDestination[]): void {
  checkWeights(issues, path, dests);
  dests.forEach((d, i) => {
    const p = field(index(path, i), 'headers');
    checkHeaderOperations(issues, field(p, 'request'), d.headers?.request, true);
    checkHeaderOperations(issues, field(p, 'response'), d.headers?.response, false);
  });
}

function validateRouteDestinations(issues: Issues, path: string, dests: readonly RouteDestination[]): void {
  checkWeights(issues, path, dests);
}

/** Envoy's abort and direct_response status must be 200..599. */
function checkHTTPStatus(status: number): string | undefined {
  return status >= 200 && status <= 599 ? undefined : `HTTP status ${status} is not in range 200-599`;
}

function validateFault(issues: Issues, path: string, fault: HTTPFaultInjection | undefined): void {
  if (!fault) return;
  if (!fault.abort && !fault.delay) issues.add(path, 'HTTP fault injection must have an abort and/or a delay');
  const abort = fault.abort;
  if (abort) {
    const p = field(path, 'abort');
    if (abort.percentage) issues.check(field(p, 'percentage'), checkPercentage(abort.percentage.value));
    const t = abort.errorType;
    // Envoy requires an error type, so an abort without one would be rejected by the proxy.
    if (t.case === 'httpStatus') issues.check(field(p, 'httpStatus'), checkHTTPStatus(t.value));
    else if (t.case === 'grpcStatus') {
      if (!isGrpcStatusName(t.value)) {
        issues.add(
          field(p, 'grpcStatus'),
          `gRPC status "${t.value}" is not supported. See https://github.com/grpc/grpc/blob/master/doc/statuscodes.md for a list of supported codes, for example 'NOT_FOUND'`,
        );
      }
    } else if (t.case === 'http2Error') issues.add(field(p, 'http2Error'), 'HTTP/2 abort fault injection not supported yet');
    else issues.add(p, 'abort needs httpStatus or grpcStatus');
  }
  const delay = fault.delay;
  if (delay) {
    const p = field(path, 'delay');
    if (delay.percentage) issues.check(field(p, 'percentage'), checkPercentage(delay.percentage.value));
    if (delay.percent !== 0) issues.check(field(p, 'percent'), checkPercent(delay.percent));
    const t = delay.httpDelayType;
    if (t.case === 'fixedDelay') issues.check(field(p, 'fixedDelay'), checkDuration(t.value));
    else if (t.case === 'exponentialDelay') issues.add(field(p, 'exponentialDelay'), 'exponentialDelay not supported yet');
    else issues.add(p, 'delay needs fixedDelay');
  }
}

const SUPPORTED_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'CONNECT', 'OPTIONS', 'TRACE']);

function validateCors(issues: Issues, path: string, cors: CorsPolicy | undefined): void {
  if (!cors) return;
  cors.allowOrigins.forEach((o, i) => {
    const p = index(field(path, 'allowOrigins'), i);
    const t = o.matchType;
    if (t.case === undefined || t.value === '') issues.add(p, `'${t.value ?? ''}' is not a valid match type for CORS allow origins`);
    else checkStringMatch(issues, p, o);
  });
  cors.allowMethods.forEach((m, i) => {
    if (!SUPPORTED_METHODS.has(m)) issues.add(index(field(path, 'allowMethods'), i), `"${m}" is not a supported HTTP method`);
  });
  for (const list of ['allowHeaders', 'exposeHeaders'] as const) {
    cors[list].forEach((h, i) => {
      if (h !== '*') issues.check(index(field(path, list), i), checkHeaderName(h));
    });
  }
  if (cors.maxAge) {
    issues.check(field(path, 'maxAge'), checkDuration(cors.maxAge));
    if (cors.maxAge.nanos > 0) issues.add(field(path, 'maxAge'), 'max_age duration is accurate only to seconds precision');
  }
}

// `retryOn` accepts Envoy's x-envoy-retry-on / x-envoy-retry-grpc-on policies or HTTP status codes.
const RETRY_ON = new Set([
  '5xx',
  'gateway-error',
  'reset',
  'reset-before-request',
  'connect-failure',
  'retriable-4xx',
  'refused-stream',
  'retriable-status-codes',
  'retriable-headers',
  'envoy-ratelimited',
  'http3-post-connect-failure',
  'cancelled',
  'deadline-exceeded',
  'internal',
  'resource-exhausted',
  'unavailable',
]);
const HTTP_STATUS_CODES = new Set([
  100, 101, 102, 103, 200, 201, 202, 203, 204, 205, 206, 207, 208, 226, 300, 301, 302, 303, 304, 305, 307, 308, 400, 401, 402, 403, 404,
  405, 406, 407, 408, 409, 410, 411, 412, 413, 414, 415, 416, 417, 418, 421, 422, 423, 424, 425, 426, 428, 429, 431, 451, 500, 501, 502,
  503, 504, 505, 506, 507, 508, 510, 511,
]);

function validateRetry(issues: Issues, path: string, r: HTTPRetry | undefined): void {
  if (!r) return;
  if (r.attempts < 0) issues.add(field(path, 'attempts'), 'attempts cannot be negative');
  if (r.attempts === 0 && (r.perTryTimeout !== undefined || r.retryOn !== '' || r.retryRemoteLocalities !== undefined)) {
    issues.add(field(path, 'attempts'), 'http retry policy configured when attempts are set to 0 (disabled)');
  }
  checkDurationField(issues, field(path, 'perTryTimeout'), r.perTryTimeout);
  checkDurationField(issues, field(path, 'backoff'), r.backoff);
  if (r.retryOn !== '') {
    for (const policy of r.retryOn.split(',')) {
      const code = /^\d+$/.test(policy) ? Number(policy) : NaN;
      if (!HTTP_STATUS_CODES.has(code) && !RETRY_ON.has(policy)) {
        issues.add(field(path, 'retryOn'), `"${policy}" is not a valid retryOn policy`);
      }
    }
  }
}

function validateRedirect(issues: Issues, path: string, r: HTTPRedirect | undefined): void {
  if (!r) return;
  if (r.uri === '' && r.authority === '' && r.redirectPort.case === undefined && r.scheme === '') {
    issues.add(path, 'redirect must specify URI, authority, scheme, or port');
  }
  if (r.redirectCode !== 0 && (r.redirectCode < 300 || r.redirectCode > 399)) {
    issues.add(field(path, 'redirectCode'), `${r.redirectCode} is not a valid redirect code, must be 3xx`);
  }
  if (r.scheme !== '' && r.scheme !== 'http' && r.scheme !== 'https')
    issues.add(field(path, 'scheme'), 'invalid redirect scheme, must be "http" or "https"');
  if (r.redirectPort.case === 'port' && r.redirectPort.value > 0) issues.check(field(path, 'port'), checkPort(r.redirectPort.value));
}

function validateRewrite(issues: Issues, path: string, r: HTTPRewrite | undefined): void {
  if (!r) return;
  if (r.uri !== '' && r.uriRegexRewrite) issues.add(path, 'rewrite may only contain one of URI or UriRegexRewrite');
  if (r.uri === '' && !r.uriRegexRewrite && r.authority === '') {
    issues.add(
      path,
      'rewrite must specify at least one of URI, UriRegexRewrite, or authority. Only one of URI or UriRegexRewrite may be specified',
    );
  }
  const rr = r.uriRegexRewrite;
  if (rr) {
    const p = field(path, 'uriRegexRewrite');
    if (rr.match === '' || rr.rewrite === '') issues.add(p, 'UriRegexRewrite requires both Rewrite and Match fields to be specified');
    else issues.check(field(p, 'match'), checkRegex(rr.match));
  }
}

/** The authority may be rewritten in one place only (rewrite.authority or a request header). */
function validateAuthorityRewrite(issues: Issues, path: string, h: HTTPRoute): void {
  let current = h.rewrite?.authority ?? '';
  const req = h.headers?.request;
  for (const op of ['set', 'add'] as const) {
    for (const [k, v] of Object.entries(req?.[op] ?? {})) {
      if (!isAuthorityHeader(k)) continue;
      if (current !== '') {
        issues.add(
          key(field(field(field(path, 'headers'), 'request'), op), k),
          `authority header cannot be set multiple times: have "${current}", attempting to set "${v}"`,
        );
        return;
      }
      current = v;
    }
  }
}
