import { type Config, resolveShortName, labelsSubsetOf } from '../../config/index.js';
import type { L4MatchAttributes, RouteDestination, TLSMatchAttributes } from '../../gen/networking/v1alpha3/virtual_service_pb.js';
import { type Proxy, type PushContext, buildClusterName } from '../../model/index.js';
import type { L4Target } from '../listener/tcp-proxy.js';

export interface L4RouteContext {
  readonly push: PushContext;
  readonly proxy: Proxy;
  /** The port the client dialled. */
  readonly port: number;
  /** `mesh` for sidecars, `<ns>/<name>` for gateways. */
  readonly gateway: string;
}

/** Whether an L4/TLS match's port, source labels, source namespace and gateways hold for this proxy. */
function l4MatchApplies(m: L4MatchAttributes | TLSMatchAttributes, vs: Config<'VirtualService'>, ctx: L4RouteContext): boolean {
  if (m.port !== 0 && m.port !== ctx.port) return false;
  if (!labelsSubsetOf(m.sourceLabels, ctx.proxy.labels)) return false;
  if (m.sourceNamespace !== '' && m.sourceNamespace !== ctx.proxy.namespace) return false;
  if (m.gateways.length > 0 && !m.gateways.some((g) => gatewayName(g, vs.meta.namespace) === ctx.gateway)) return false;
  return true;
}

function gatewayName(g: string, vsNamespace: string): string {
  return g === 'mesh' || g.includes('/') ? g : `${vsNamespace}/${g}`;
}

/** Route destinations → one cluster, or weighted clusters (weights as written: Envoy sums them). */
export function l4TargetOf(ctx: L4RouteContext, vs: Config<'VirtualService'>, route: readonly RouteDestination[]): L4Target | undefined {
  const resolved = route
    .filter((rd) => rd.destination !== undefined && (route.length === 1 || rd.weight > 0))
    .map((rd) => {
      const d = rd.destination!;
      const host = resolveShortName(d.host, vs.meta.namespace, ctx.push.mesh.domain);
      let port = d.port?.number ?? 0;
      if (port === 0) {
        const svc = ctx.push.service(host, ctx.proxy.namespace);
        port = svc && svc.ports.length === 1 ? svc.ports[0]!.port : ctx.port;
      }
      return { name: buildClusterName('outbound', port, d.subset, host), weight: rd.weight };
    });
  if (resolved.length === 0) return undefined;
  if (resolved.length === 1) return { cluster: resolved[0]!.name };
  return { weighted: resolved };
}

/** The first VirtualService `tcp` rule whose match applies (a rule without match applies everywhere). */
export function tcpRouteTarget(ctx: L4RouteContext, vs: Config<'VirtualService'>): L4Target | undefined {
  for (const rule of vs.spec.tcp) {
    if (rule.match.length > 0 && !rule.match.some((m) => l4MatchApplies(m, vs, ctx))) continue;
    const t = l4TargetOf(ctx, vs, rule.route);
    if (t) return t;
  }
  return undefined;
}

/** VirtualService `tls` rules that apply on this port, each with the SNI hosts it matches. */
export function tlsRouteTargets(
  ctx: L4RouteContext,
  vs: Config<'VirtualService'>,
): { readonly sniHosts: readonly string[]; readonly target: L4Target }[] {
  const out: { sniHosts: string[]; target: L4Target }[] = [];
  for (const rule of vs.spec.tls) {
    const matches = rule.match.filter((m) => l4MatchApplies(m, vs, ctx));
    if (matches.length === 0) continue;
    const target = l4TargetOf(ctx, vs, rule.route);
    if (!target) continue;
    const sniHosts = [
      ...new Set(matches.flatMap((m) => m.sniHosts.map((h) => resolveShortName(h, vs.meta.namespace, ctx.push.mesh.domain)))),
    ];
    out.push({ sniHosts, target });
  }
  return out;
}
