import { create } from '@bufbuild/protobuf';
import { TrafficDirection } from '../../gen/envoy/config/core/v3/base_pb.js';
import { ListenerSchema, type Listener } from '../../gen/envoy/config/listener/v3/listener_pb.js';
import { DownstreamTlsContextSchema } from '../../gen/envoy/extensions/transport_sockets/tls/v3/tls_pb.js';
import { isHTTPProtocol } from '../../config/index.js';
import { durationFromMs, packAny } from '../common.js';
import { wasmHttpFilters, wasmSource, type PhasedFilters } from '../extension/wasm-plugins.js';
import { buildHcm, HCM_FILTER } from '../listener/hcm.js';
import { hcmTelemetry, listenerAccessLogs, type AccessLogInit, type HcmTelemetry } from '../telemetry/index.js';
import {
  MAX_CONNECTIONS_PER_SOCKET_EVENT,
  socketAddress,
  tlsInspector,
  TRANSPORT_SOCKET_CONNECT_TIMEOUT_MS,
  type FilterChainInit,
} from '../listener/listener-common.js';
import type { FilterInit } from '../listener/tcp-proxy.js';
import type { ProxyExtensions } from '../../model/index.js';
import { dualStackWildcards, wildcardAddress } from '../service-addresses.js';
import type { GatewayContext } from './gateway-context.js';
import { passthroughChains, tcpServerFilters } from './gateway-l4.js';
import { buildGatewayTlsContext, type DownstreamTlsInit } from './gateway-tls.js';
import { isHttpsTerminated, isPassthrough, mergeGateways, type GatewayServer, type MergedServers } from './merged-gateway.js';

const TLS_TRANSPORT_SOCKET = 'envoy.transport_sockets.tls';
/** istiod's PILOT_GATEWAY_TRANSPORT_SOCKET_CONNECT_TIMEOUT default: bounds slow TLS handshakes. */
/** istiod's stat prefix delimiter (constants.StatPrefixDelimiter). */
const STAT_DELIMITER = ';';

/** A filter chain before it becomes Envoy's. */
interface ChainDraft {
  readonly sniHosts: readonly string[];
  readonly applicationProtocols?: readonly string[];
  readonly tls?: DownstreamTlsInit;
  /** HTTP chains: the RDS name and an explicit stat prefix (a server's `name`), else network filters. */
  readonly http?: { readonly rds: string; readonly statPrefix?: string };
  readonly filters?: readonly FilterInit[];
}

/**
 * The listeners of a gateway proxy, as istiod's buildGatewayListeners: one `<bind>_<port>` per port
 * its Gateways open (bind 0.0.0.0, `::` on an IPv6-only gateway, unless the server sets one), traffic direction OUTBOUND. Plain
 * HTTP servers on a port share one HCM chain over RDS `http.<port>`; each TLS server gets its own
 * chain, selected by SNI: an HCM over its own RDS when it terminates HTTPS, tcp_proxy for TCP,
 * TLS-terminated TCP and passthrough. A port left without a chain (say a TCP server no VirtualService
 * routes) gets no listener.
 */
export function buildGatewayListeners(ctx: GatewayContext): Listener[] {
  const merged = mergeGateways(ctx.gateways, ctx.push.serviceInstances(ctx.proxy));
  const unprivileged = ctx.proxy.metadata.raw.UNPRIVILEGED_POD === 'true';
  const byName = new Map<string, { bind: string; wildcard: boolean; port: number; chains: ChainDraft[] }>();
  const sniByPort = new Map<number, Map<string, string>>();
  for (const ms of merged.ports) {
    if (unprivileged && ms.port < 1024) continue; // an unprivileged pod cannot bind it
    // istiod's actualWildcards[0]: `::` for an IPv6-only gateway, else 0.0.0.0.
    const bind = ms.bind !== '' ? ms.bind : wildcardAddress(ctx.proxy);
    const name = `${bind}_${ms.port}`;
    const knownSni = sniByPort.get(ms.port) ?? new Map<string, string>();
    sniByPort.set(ms.port, knownSni);
    const chains = chainsFor(ctx, ms, knownSni);
    const l = byName.get(name);
    if (l) l.chains.push(...chains);
    else byName.set(name, { bind, wildcard: ms.bind === '', port: ms.port, chains });
  }
  const out: Listener[] = [];
  for (const [name, l] of byName) {
    if (l.chains.length === 0) continue;
    // WasmPlugin `match` ports select a gateway HCM by its listener port (istiod: the listener opts' port).
    const phased = wasmHttpFilters(wasmSource(ctx.push), ctx.proxy, { port: l.port, cls: 'GATEWAY' });
    out.push(
      buildListener(
        name,
        l.bind,
        // A dual-stack gateway under ISTIO_DUAL_STACK also listens on `::` (istiod's extraBind); a server's own bind stays alone.
        l.wildcard ? dualStackWildcards(ctx.push, ctx.proxy, l.port) : [],
        l.port,
        l.chains,
        phased,
        hcmTelemetry(ctx.push, ctx.proxy, 'gateway'),
        listenerAccessLogs(ctx.push, ctx.proxy, 'gateway'),
        ctx.proxy.extensions,
      ),
    );
  }
  return out;
}

function chainsFor(ctx: GatewayContext, ms: MergedServers, knownSni: Map<string, string>): ChainDraft[] {
  if (isHTTPProtocol(ms.protocol)) return [{ sniHosts: [], http: { rds: ms.routeName } }];
  const chains: ChainDraft[] = [];
  for (const gs of ms.servers) {
    if (isHttpsTerminated(gs.server)) {
      chains.push({
        sniHosts: gs.sniHosts,
        tls: buildGatewayTlsContext(gs.server.tls!, false),
        http: { rds: gs.routeName, ...(gs.server.name !== '' ? { statPrefix: gs.server.name } : {}) },
      });
    } else if (gs.server.tls && isPassthrough(gs.server)) {
      chains.push(...passthroughChains(ctx, gs, knownSni));
    } else {
      chains.push(...tcpChain(ctx, gs));
    }
  }
  return chains;
}

/** Opaque TCP (no TLS) or TLS-terminating TCP: one chain with the first applicable `tcp` route. */
function tcpChain(ctx: GatewayContext, gs: GatewayServer): ChainDraft[] {
  const filters = tcpServerFilters(ctx, gs);
  if (filters.length === 0) return [];
  if (!gs.server.tls) return [{ sniHosts: [], filters }];
  return [{ sniHosts: gs.sniHosts, tls: buildGatewayTlsContext(gs.server.tls, true), filters }];
}

function buildListener(
  name: string,
  bind: string,
  additionalAddresses: ReturnType<typeof dualStackWildcards>,
  port: number,
  drafts: readonly ChainDraft[],
  phased: PhasedFilters,
  telemetry: HcmTelemetry,
  accessLog: readonly AccessLogInit[],
  extensions: ProxyExtensions,
): Listener {
  // SNI or ALPN selection needs the ClientHello (istiod adds the inspector for either).
  const inspect = drafts.some((c) => c.sniHosts.length > 0 || (c.tls?.commonTlsContext?.alpnProtocols?.length ?? 0) > 0);
  const defaultStatPrefix = `outbound_${name}${STAT_DELIMITER}`;
  const filterChains: FilterChainInit[] = drafts.map((c) => {
    const serverNames = c.sniHosts.includes('*') ? [] : [...c.sniHosts].sort();
    const alpn = c.applicationProtocols ?? [];
    const match =
      serverNames.length > 0 || alpn.length > 0
        ? {
            filterChainMatch: {
              ...(serverNames.length > 0 ? { serverNames } : {}),
              ...(alpn.length > 0 ? { applicationProtocols: [...alpn] } : {}),
            },
          }
        : {};
    const filters: FilterInit[] = c.http
      ? [
          {
            name: HCM_FILTER,
            configType: {
              case: 'typedConfig',
              value: buildHcm({
                statPrefix: c.http.statPrefix ?? defaultStatPrefix,
                route: { rds: c.http.rds },
                direction: 'gateway',
                extensions,
                phased,
                telemetry,
              }),
            },
          },
        ]
      : [...(c.filters ?? [])];
    return {
      ...match,
      filters,
      ...(c.tls
        ? {
            transportSocket: {
              name: TLS_TRANSPORT_SOCKET,
              configType: { case: 'typedConfig', value: packAny(DownstreamTlsContextSchema, c.tls) },
            },
          }
        : {}),
      transportSocketConnectTimeout: durationFromMs(TRANSPORT_SOCKET_CONNECT_TIMEOUT_MS),
    };
  });
  return create(ListenerSchema, {
    name,
    address: socketAddress(bind, port),
    ...(additionalAddresses.length > 0 ? { additionalAddresses } : {}),
    trafficDirection: TrafficDirection.OUTBOUND,
    maxConnectionsToAcceptPerSocketEvent: MAX_CONNECTIONS_PER_SOCKET_EVENT,
    ...(inspect ? { listenerFilters: [tlsInspector()] } : {}),
    filterChains,
    accessLog: [...accessLog],
  });
}
