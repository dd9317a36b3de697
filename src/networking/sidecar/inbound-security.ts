import { type Any, anyPack } from '@bufbuild/protobuf/wkt';
import { DownstreamTlsContextSchema } from '../../gen/envoy/extensions/transport_sockets/tls/v3/tls_pb.js';
import { mtlsModeForPort, type Proxy, type PushContext } from '../../model/index.js';
import type { Logger } from '../../util/log.js';
import type { HttpFilterInit } from '../listener/hcm.js';
import type { FilterInit } from '../listener/tcp-proxy.js';
import {
  buildHttpRbacFilters,
  buildJwtAuthnFilter,
  buildNetworkRbacFilters,
  inboundChainVariants,
  inboundTlsContext,
  type AuthzOptions,
} from '../policy/index.js';
import type { InboundSecurity } from './inbound-listener.js';

/**
 * The workload's security policies as the inbound listener consumes them: the composed
 * PeerAuthentication mode (mesh → namespace → workload → port), RequestAuthentication as
 * jwt_authn and AuthorizationPolicy as RBAC (DENY, then ALLOW, with AUDIT alongside). Filters are
 * built once per workload view; rules istiod would drop are logged, never fatal.
 */
export function inboundSecurity(push: PushContext, proxy: Proxy, logger: Logger): InboundSecurity {
  const mtls = push.security.effectiveMtls(proxy.namespace, proxy.labels);
  const authz = push.security.authorizationPolicies(proxy.namespace, proxy.labels);
  const where = `${proxy.namespace}/${proxy.id}`;
  const opts: AuthzOptions = {
    trustDomain: push.mesh.trustDomain,
    onSkippedRule: (s) => logger.debug('authorization rule skipped', { proxy: where, rule: s.rule, reason: s.reason }),
  };
  let http: HttpFilterInit[] | undefined;
  let network: FilterInit[] | undefined;
  const tls = new Map<'http' | 'tcp', Any>();
  return {
    mtlsMode: (port) => (port === undefined ? mtls.mode : mtlsModeForPort(mtls, port)),
    chainVariants: inboundChainVariants,
    tlsContext(protocol) {
      let any = tls.get(protocol);
      if (!any)
        tls.set(protocol, (any = anyPack(DownstreamTlsContextSchema, inboundTlsContext({ trustDomain: push.mesh.trustDomain, protocol }))));
      return any;
    },
    httpFilters() {
      if (!http) {
        const jwt = buildJwtAuthnFilter(push.security.requestAuthentications(proxy.namespace, proxy.labels));
        http = [...(jwt ? [jwt] : []), ...buildHttpRbacFilters(authz, opts)];
      }
      return http;
    },
    networkFilters() {
      network ??= buildNetworkRbacFilters(authz, opts);
      return network;
    },
  };
}
