import type { Any } from '@bufbuild/protobuf/wkt';
import type { RouteConfigurationSchema } from '../../gen/envoy/config/route/v3/route_pb.js';
import { CorsSchema } from '../../gen/envoy/extensions/filters/http/cors/v3/cors_pb.js';
import { HTTPFaultSchema } from '../../gen/envoy/extensions/filters/http/fault/v3/fault_pb.js';
import { RouterSchema } from '../../gen/envoy/extensions/filters/http/router/v3/router_pb.js';
import {
  HttpConnectionManager_ForwardClientCertDetails,
  HttpConnectionManager_PathWithEscapedSlashesAction,
  HttpConnectionManagerSchema,
  type HttpFilterSchema,
} from '../../gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js';
import { adsConfigSource, durationFromMs, packAny, type Init } from '../common.js';
import { CORS_FILTER } from '../route/cors.js';
import { FAULT_FILTER, ROUTER_FILTER } from '../route/route-action.js';
import type { PhasedFilters } from '../extension/wasm-plugins.js';
import { JWT_AUTHN_FILTER } from '../policy/jwt-authn.js';
import type { HcmTelemetry } from '../telemetry/index.js';
import type { ProxyExtensions } from '../../model/index.js';
import { leadingIstioHttpFilters, trailingIstioHttpFilters } from '../istio-extensions.js';

export type HttpFilterInit = Init<typeof HttpFilterSchema>;
export const HCM_FILTER = 'envoy.filters.network.http_connection_manager';

/** `waypoint`: a waypoint's main_internal chains (istiod's inbound class, with the waypoint's own peer metadata and no XFCC forwarding). */
export type HcmDirection = 'outbound' | 'inbound' | 'gateway' | 'waypoint';

export interface HcmOptions {
  readonly statPrefix: string;
  /** RDS by name over ADS, or an inline route configuration (inbound chains). */
  readonly route: { readonly rds: string } | { readonly inline: Init<typeof RouteConfigurationSchema> };
  readonly direction: HcmDirection;
  /** What the proxy can load: Istio-proxy filters (metadata exchange, ALPN) only where it can. */
  readonly extensions: ProxyExtensions;
  /** Filters that run before fault/cors/router (authn, RBAC on inbound). */
  readonly leadingFilters?: readonly HttpFilterInit[];
  /** Extension filters by phase (WasmPlugins over ECDS), placed around authn/authz as istiod does. */
  readonly phased?: PhasedFilters;
  /** Telemetry's stats filters, access logs, tracing and request-id extension (src/networking/telemetry). */
  readonly telemetry?: HcmTelemetry;
  /** The port speaks HTTP/2 (HTTP2, gRPC): istiod's waypoint chains then set http2_protocol_options (defaults). */
  readonly http2?: boolean;
}

/**
 * istiod's order: metadata exchange, AUTHN extensions, authn (jwt_authn), AUTHZ extensions, authz
 * (RBAC), STATS and unspecified-phase extensions, gRPC stats, ALPN, then fault, CORS, Telemetry's
 * stats filters and the router.
 */
function orderedFilters(o: HcmOptions): HttpFilterInit[] {
  const leading = o.leadingFilters ?? [];
  const phase = o.phased ?? ((): readonly HttpFilterInit[] => []);
  return [
    // A waypoint's peer metadata filter is its own (after CORS, in the telemetry's place).
    ...(o.direction === 'waypoint' ? [] : leadingIstioHttpFilters(o.extensions, o.direction)),
    ...phase('AUTHN'),
    ...leading.filter((f) => f.name === JWT_AUTHN_FILTER),
    ...phase('AUTHZ'),
    ...leading.filter((f) => f.name !== JWT_AUTHN_FILTER),
    ...phase('STATS'),
    ...phase('UNSPECIFIED'),
    ...trailingIstioHttpFilters(o.extensions, o.direction === 'waypoint' ? 'inbound' : o.direction),
    ...standardFilters(o.telemetry?.httpFilters ?? []),
  ];
}

/**
 * The fault and CORS filters carry no config of their own: each route's typed_per_filter_config
 * (faults) or cors policy switches them on, as istiod configures them.
 */
function standardFilters(telemetry: readonly HttpFilterInit[]): HttpFilterInit[] {
  return [
    { name: FAULT_FILTER, configType: { case: 'typedConfig', value: packAny(HTTPFaultSchema, {}) } },
    { name: CORS_FILTER, configType: { case: 'typedConfig', value: packAny(CorsSchema, {}) } },
    ...telemetry,
    { name: ROUTER_FILTER, configType: { case: 'typedConfig', value: packAny(RouterSchema, {}) } },
  ];
}

/**
 * The HttpConnectionManager of sidecar and gateway listeners, with istiod's defaults: websocket
 * upgrades, normalized paths, no stream idle timeout; inbound sets the `istio-envoy` server name
 * and forwards the peer's certificate details (XFCC) to the app; gateways trust the remote address
 * and sanitize XFCC.
 */
export function buildHcm(o: HcmOptions): Any {
  const inbound = o.direction === 'inbound';
  return packAny(HttpConnectionManagerSchema, {
    statPrefix: o.statPrefix,
    routeSpecifier:
      'rds' in o.route
        ? {
            case: 'rds',
            value: { configSource: { ...adsConfigSource(), initialFetchTimeout: durationFromMs(0) }, routeConfigName: o.route.rds },
          }
        : { case: 'routeConfig', value: o.route.inline },
    httpFilters: orderedFilters(o),
    upgradeConfigs: [{ upgradeType: 'websocket' }],
    normalizePath: true,
    pathWithEscapedSlashesAction: HttpConnectionManager_PathWithEscapedSlashesAction.KEEP_UNCHANGED,
    proxy100Continue: true,
    streamIdleTimeout: durationFromMs(0),
    useRemoteAddress: o.direction === 'gateway',
    ...(o.telemetry
      ? {
          accessLog: [...o.telemetry.accessLog],
          ...(o.telemetry.tracing ? { tracing: o.telemetry.tracing } : {}),
          requestIdExtension: o.telemetry.requestIdExtension,
        }
      : {}),
    ...(inbound
      ? {
          serverName: 'istio-envoy',
          forwardClientCertDetails: HttpConnectionManager_ForwardClientCertDetails.APPEND_FORWARD,
          setCurrentClientCertDetails: { subject: true, dns: true, uri: true },
        }
      : {}),
    ...(o.direction === 'waypoint' ? { serverName: 'istio-envoy' } : {}),
    ...(o.http2 ? { http2ProtocolOptions: {} } : {}),
    // A gateway is the edge: it replaces whatever XFCC a client sent with the details of its own peer.
    ...(o.direction === 'gateway'
      ? {
          serverName: 'istio-envoy',
          httpProtocolOptions: {},
          forwardClientCertDetails: HttpConnectionManager_ForwardClientCertDetails.SANITIZE_SET,
          setCurrentClientCertDetails: { subject: true, cert: true, dns: true, uri: true },
        }
      : {}),
  });
}
