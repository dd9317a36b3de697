import { create, toBinary } from '@bufbuild/protobuf';
import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { RouteConfigurationSchema } from '../../gen/envoy/config/route/v3/route_pb.js';
import { VirtualHostSchema } from '../../gen/envoy/config/route/v3/route_components_pb.js';
import { isIPAddress } from '../../config/index.js';
import { PASSTHROUGH_CLUSTER, type Proxy, type PushContext } from '../../model/index.js';
import type { Service } from '../../registry/index.js';
import { addressViewKey, allocatedAddressesFor, ownAddressesFor } from '../service-addresses.js';
import { type Init, durationFromMs } from '../common.js';
import { virtualHostNames } from '../route/virtual-host-domains.js';
import { portKind } from '../listener/listener-common.js';
import { buildHttpRoutes } from '../route/http-routes.js';
import type { OutboundContext } from './outbound-listeners.js';
import { MAX_DIRECT_RESPONSE_BODY_BYTES } from '../route/route-action.js';

type VirtualHostInit = Init<typeof VirtualHostSchema>;

/** One service's virtual host, and its encoding (reused as is when no domain is dropped as a duplicate). */
interface CachedVirtualHost {
  readonly init: VirtualHostInit;
  readonly bytes: Uint8Array;
}

const encodeVirtualHost = (init: VirtualHostInit): Uint8Array => toBinary(VirtualHostSchema, create(VirtualHostSchema, init));

/** The fields after `virtual_hosts` (all numbered above 2), encoded once. */
const TRAILER = toBinary(
  RouteConfigurationSchema,
  create(RouteConfigurationSchema, {
    validateClusters: false,
    maxDirectResponseBodySizeBytes: MAX_DIRECT_RESPONSE_BODY_BYTES,
    ignorePortInHostMatching: true,
  }),
);

/**
 * The addresses a service's virtual host also answers to: its own IPs (its proxy's cluster's, for a
 * Service of several clusters: istiod's GetAllAddressesForProxy), else the first address allocated
 * to it that the proxy consumes (istiod names the one GetAddressForProxy gives), an IPv6 one in
 * brackets as a Host header carries it.
 */
function domainAddresses(service: Service, push: PushContext, proxy: Proxy): string[] {
  const own = ownAddressesFor(service, push, proxy).filter((a) => isIPAddress(a));
  if (own.length > 0) return own;
  const first = allocatedAddressesFor(service, push, proxy)[0];
  if (first === undefined) return [];
  return [first.includes(':') ? `[${first}]` : first];
}

const routePort = (s: string): number | undefined => {
  const port = Number(s);
  return Number.isInteger(port) && port >= 1 && port <= 65535 && String(port) === s ? port : undefined;
};

/** Whether the service has `port` as an HTTP or sniffed port: it has a virtual host there. */
const routedOn = (service: Service, port: number): boolean =>
  service.ports.some((p) => p.port === port && (portKind(p.protocol) === 'http' || portKind(p.protocol) === 'auto'));

/** A service's virtual host on `port`, built and encoded once per service, port and view. */
function serviceVirtualHost(ctx: OutboundContext, service: Service, port: number, sniffed: boolean): CachedVirtualHost {
  return ctx.push.deriveForService(
    service,
    `RDS|vh|${sniffed ? 'sniffed|' : ''}${service.namespace}/${service.hostname}|${port}|${ctx.push.routeViewKey(ctx.proxy)}|${addressViewKey(ctx.push, ctx.proxy)}`,
    (): CachedVirtualHost => {
      const init: VirtualHostInit = {
        name: `${service.hostname}:${port}`,
        // A sniffed port's own route configuration is reached only through the service's address: any Host is it.
        domains: sniffed
          ? ['*']
          : [...virtualHostNames(service.hostname, ctx.proxy, ctx.push.mesh.domain), ...domainAddresses(service, ctx.push, ctx.proxy)],
        routes: buildHttpRoutes({ push: ctx.push, proxy: ctx.proxy, service, port, headerStyle: 'string_match' }),
        includeRequestAttemptCount: true,
      };
      return { init, bytes: encodeVirtualHost(init) };
    },
  );
}

/**
 * RDS `<host>:<port>`, which the listener of a sniffed port on its service's own address names:
 * that service's virtual host alone, answering to any Host, and no catch-all (istiod's
 * getVirtualHostsForSniffedServicePort). No virtual host when the proxy does not see the service.
 */
function encodeSniffedRouteConfig(ctx: OutboundContext, name: string, host: string, port: number): Uint8Array {
  const service = ctx.scope.services.find((s) => s.hostname === host && routedOn(s, port));
  const w = new BinaryWriter().tag(1, WireType.LengthDelimited).string(name);
  if (service) w.tag(2, WireType.LengthDelimited).bytes(serviceVirtualHost(ctx, service, port, true).bytes);
  return w.raw(TRAILER).finish();
}

/**
 * RDS `<port>` for a sidecar, encoded: one virtual host per visible HTTP (or sniffed) service on
 * that port, named `<host>:<port>`, answering to istiod's domain list (FQDN, short names, VIPs;
 * ports are ignored in host matching); then the catch-all — `allow_any` to PassthroughCluster, or
 * `block_all` (502) under REGISTRY_ONLY. Undefined when the name is not a port this proxy has HTTP
 * services on. A name `<host>:<port>` is a sniffed port's own (encodeSniffedRouteConfig).
 *
 * Each service's virtual host is built and encoded apart (cached per service, port and route
 * view), and the RouteConfiguration is spliced from those bytes in field order, so a change to one
 * service re-encodes one virtual host, not the thousand beside it. The result is the canonical
 * encoding of the same message (a test holds it to a decode/encode round trip).
 */
export function encodeOutboundRouteConfig(ctx: OutboundContext, name: string): Uint8Array | undefined {
  const colon = name.lastIndexOf(':');
  if (colon > 0) {
    const sniffedPort = routePort(name.slice(colon + 1));
    return sniffedPort === undefined ? undefined : encodeSniffedRouteConfig(ctx, name, name.slice(0, colon), sniffedPort);
  }
  const port = routePort(name);
  if (port === undefined) return undefined;
  const hosts: CachedVirtualHost[] = [];
  for (const service of ctx.scope.services) if (routedOn(service, port)) hosts.push(serviceVirtualHost(ctx, service, port, false));
  if (hosts.length === 0) return undefined;
  const all = catchAll(ctx);
  hosts.push({ init: all, bytes: encodeVirtualHost(all) });
  // Hosts match without their port, as istiod configures sidecars (a Host of `reviews:9080` or `reviews` alike).
  const w = new BinaryWriter().tag(1, WireType.LengthDelimited).string(name);
  for (const vh of dedupeDomains(hosts)) w.tag(2, WireType.LengthDelimited).bytes(vh);
  return w.raw(TRAILER).finish();
}

function catchAll(ctx: OutboundContext): VirtualHostInit {
  const match = { pathSpecifier: { case: 'prefix' as const, value: '/' } };
  if (ctx.scope.outboundTrafficPolicy === 'REGISTRY_ONLY') {
    return {
      name: 'block_all',
      domains: ['*'],
      routes: [{ name: 'block_all', match, action: { case: 'directResponse', value: { status: 502 } } }],
      includeRequestAttemptCount: true,
    };
  }
  return {
    name: 'allow_any',
    domains: ['*'],
    routes: [
      {
        name: 'allow_any',
        match,
        action: {
          case: 'route',
          value: {
            clusterSpecifier: { case: 'cluster', value: PASSTHROUGH_CLUSTER },
            timeout: durationFromMs(0),
            maxGrpcTimeout: durationFromMs(0),
          },
        },
      },
    ],
    includeRequestAttemptCount: true,
  };
}

/**
 * Envoy rejects a RouteConfiguration in which two virtual hosts share a domain. Two services can
 * claim the same short name or VIP (e.g. `reviews` from two namespaces' ServiceEntries): the first
 * keeps it, as istiod does. Returns each virtual host's encoding; only those that lost a domain
 * are encoded again, and those left without one are dropped.
 */
function dedupeDomains(vhosts: readonly CachedVirtualHost[]): Uint8Array[] {
  const seen = new Set<string>();
  const out: Uint8Array[] = [];
  for (const vh of vhosts) {
    const domains = vh.init.domains ?? [];
    const kept = domains.filter((d) => (seen.has(d.toLowerCase()) ? false : (seen.add(d.toLowerCase()), true)));
    if (kept.length === domains.length) out.push(vh.bytes);
    else if (kept.length > 0) out.push(encodeVirtualHost({ ...vh.init, domains: kept }));
  }
  return out;
}
