import { isIP } from 'node:net';
import { create } from '@bufbuild/protobuf';
import { AnySchema, anyUnpack } from '@bufbuild/protobuf/wkt';
import { ListenerSchema, type Listener } from '../../gen/envoy/config/listener/v3/listener_pb.js';
import { RBACSchema as HttpRbacSchema } from '../../gen/envoy/extensions/filters/http/rbac/v3/rbac_pb.js';
import { RouterSchema } from '../../gen/envoy/extensions/filters/http/router/v3/router_pb.js';
import {
  HttpConnectionManagerSchema,
  type HttpFilterSchema,
} from '../../gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js';
import { mtlsModeForPort, type Proxy, type PushContext } from '../../model/index.js';
import { packAny, type Init } from '../common.js';

import { buildHttpRbacFilters, HTTP_RBAC_FILTER, type SkippedRule } from '../policy/index.js';
import { ROUTER_FILTER } from '../route/route-action.js';
import { grpcDownstreamTlsSocket } from './grpc-tls.js';
import { TLS_MODE_LABEL } from '../../config/constants.js';

/**
 * The Listener name prefix a gRPC XdsServer asks for: Istio's agent writes
 * `server_listener_resource_name_template: xds.istio.io/grpc/lds/inbound/%s` into the bootstrap
 * and the server fills in its listening `ip:port`.
 */
export const INBOUND_LISTENER_PREFIX = 'xds.istio.io/grpc/lds/inbound/';
/** istiod's name of the DENY filter: gRPC NACKs two HTTP filters of the same name. */
export const HTTP_RBAC_DENY_FILTER = `${HTTP_RBAC_FILTER}.DENY`;

type HttpFilterInit = Init<typeof HttpFilterSchema>;

export interface InboundAddress {
  /** The IP the server bound, without brackets (`0.0.0.0`, `::`, `10.0.0.1`). */
  readonly host: string;
  readonly port: number;
}

/** `xds.istio.io/grpc/lds/inbound/<ip>:<port>` (IPv6 in brackets) → address; undefined for anything else. */
export function parseInboundListenerName(name: string): InboundAddress | undefined {
  if (!name.startsWith(INBOUND_LISTENER_PREFIX)) return undefined;
  const addr = name.slice(INBOUND_LISTENER_PREFIX.length);
  let host: string;
  let portText: string;
  if (addr.startsWith('[')) {
    const end = addr.indexOf(']');
    if (end < 0 || addr[end + 1] !== ':') return undefined;
    host = addr.slice(1, end);
    portText = addr.slice(end + 2);
  } else {
    const colon = addr.lastIndexOf(':');
    if (colon <= 0) return undefined;
    host = addr.slice(0, colon);
    portText = addr.slice(colon + 1);
    if (host.includes(':')) return undefined; // an IPv6 address must be bracketed
  }
  // XdsServer only binds `IP:port`, so a host name is not a listener it can ask for.
  if (isIP(host) === 0 || !/^\d{1,5}$/.test(portText)) return undefined;
  const port = Number(portText);
  return port >= 1 && port <= 65535 ? { host, port } : undefined;
}

/**
 * The mTLS mode a gRPC server gets on `port`, as istiod's grpcgen decides it: STRICT stays;
 * PERMISSIVE becomes STRICT on workloads labelled `security.istio.io/tlsMode: istio` (their
 * clients use mTLS) and plaintext otherwise — a gRPC server cannot tell TLS from plaintext on one
 * port (filter chains with transport_protocol `tls` never match, gRPC A36); DISABLE is plaintext.
 */
export function grpcInboundMtlsMode(push: PushContext, proxy: Proxy, port: number): 'STRICT' | 'DISABLE' {
  const mode = mtlsModeForPort(push.security.effectiveMtls(proxy.namespace, proxy.labels), port);
  if (mode === 'STRICT') return 'STRICT';
  if (mode === 'PERMISSIVE' && proxy.labels[TLS_MODE_LABEL] === 'istio') return 'STRICT';
  return 'DISABLE';
}

export interface GrpcRbacOptions {
  /** Told of each rule left out (as istiod logs them); the rest of the policy still applies. */
  readonly onSkippedRule?: (skipped: SkippedRule) => void;
}

/**
 * The workload's AuthorizationPolicies as gRPC RBAC filters: DENY (named `…rbac.DENY`) then ALLOW.
 * gRPC knows neither the LOG action (AUDIT) nor shadow rules, and NACKs an RBAC without `rules`:
 * so AUDIT and CUSTOM policies are left out, as istiod does, dry-run policies are not enforced,
 * and shadow rules are dropped. An ALLOW group whose rules were all skipped keeps its empty
 * policy map and so denies everything, as the sidecar's would (istiod's grpcgen drops it).
 */
export function grpcRbacFilters(push: PushContext, proxy: Proxy, opts: GrpcRbacOptions = {}): HttpFilterInit[] {
  const policies = push.security.authorizationPolicies(proxy.namespace, proxy.labels);
  const authz = { trustDomain: push.mesh.trustDomain, ...(opts.onSkippedRule ? { onSkippedRule: opts.onSkippedRule } : {}) };
  const out: HttpFilterInit[] = [];
  const groups = [
    { name: HTTP_RBAC_DENY_FILTER, filters: buildHttpRbacFilters({ deny: policies.deny }, authz) },
    { name: HTTP_RBAC_FILTER, filters: buildHttpRbacFilters({ allow: policies.allow }, authz) },
  ];
  for (const { name, filters } of groups) {
    for (const f of filters) {
      const rbac = f.configType?.case === 'typedConfig' ? anyUnpack(create(AnySchema, f.configType.value), HttpRbacSchema) : undefined;
      if (!rbac?.rules) continue;
      out.push({ name, configType: { case: 'typedConfig', value: packAny(HttpRbacSchema, { rules: rbac.rules }) } });
    }
  }
  return out;
}

const ROUTER: HttpFilterInit = { name: ROUTER_FILTER, configType: { case: 'typedConfig', value: packAny(RouterSchema, {}) } };

/**
 * istiod's grpcgen buildInboundListeners for one requested name: the listening address (XdsServer
 * refuses a Listener whose address is not the one it bound), one filter chain without a match
 * (`inbound-mtls` with a DownstreamTlsContext requiring client certificates, or
 * `inbound-plaintext`) and never a default_filter_chain (XdsServer crashes when its presence
 * toggles). The HCM carries its route inline — one non-forwarding route, as gRPC servers require —
 * and RBAC then router. Unlike istiod, the workload needs no service on the port: its namespace and
 * labels come from the node, the port from the name.
 */
export function buildGrpcInboundListener(
  name: string,
  addr: InboundAddress,
  push: PushContext,
  proxy: Proxy,
  opts: GrpcRbacOptions = {},
): Listener {
  const mtls = grpcInboundMtlsMode(push, proxy, addr.port) === 'STRICT';
  const suffix = mtls ? 'mtls' : 'plaintext';
  const hcm = packAny(HttpConnectionManagerSchema, {
    statPrefix: `inbound_${addr.port}`,
    routeSpecifier: {
      case: 'routeConfig',
      value: {
        name: 'inbound',
        virtualHosts: [
          {
            name: 'inbound',
            domains: ['*'],
            routes: [{ match: { pathSpecifier: { case: 'prefix', value: '/' } }, action: { case: 'nonForwardingAction', value: {} } }],
          },
        ],
      },
    },
    httpFilters: [...grpcRbacFilters(push, proxy, opts), ROUTER],
  });
  return create(ListenerSchema, {
    name,
    address: { address: { case: 'socketAddress', value: { address: addr.host, portSpecifier: { case: 'portValue', value: addr.port } } } },
    filterChains: [
      {
        name: `inbound-${suffix}`,
        filters: [{ name: `inbound-hcm${suffix}`, configType: { case: 'typedConfig', value: hcm } }],
        ...(mtls ? { transportSocket: grpcDownstreamTlsSocket() } : {}),
      },
    ],
  });
}
