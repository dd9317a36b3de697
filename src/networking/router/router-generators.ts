import { toBinary } from '@bufbuild/protobuf';
import { ListenerSchema } from '../../gen/envoy/config/listener/v3/listener_pb.js';
import { RouteConfigurationSchema } from '../../gen/envoy/config/route/v3/route_pb.js';
import { SecretSchema } from '../../gen/envoy/extensions/transport_sockets/tls/v3/secret_pb.js';
import { type Proxy, type PushContext, ReferenceGrants, type CredentialLookup } from '../../model/index.js';
import type { Logger } from '../../util/log.js';
import { type Generator, makeResource, type XdsResource } from '../../xds/index.js';
import { TypeUrl } from '../../xds/type-urls.js';
import { wasmViewKey } from '../extension/wasm-plugins.js';
import { telemetryViewKey } from '../telemetry/index.js';
import { buildGatewayListeners, buildGatewayRoutes, buildGatewaySecrets, gatewayContext, type GatewayContext } from '../gateway/index.js';
import { dualStackWildcards, wildcardAddress } from '../service-addresses.js';

/**
 * What a router's config depends on beyond the push: its namespace (visibility), the Gateways
 * selecting it and its service ports (server port → target port). Replicas of one gateway
 * deployment share the key and so share the encoded resources. The context is made again inside
 * each build so that what the build reads is recorded as its dependencies.
 */
function routerKey(push: PushContext, proxy: Proxy): string {
  const gateways = push
    .gatewaysFor(proxy)
    .map((g) => `${g.meta.namespace}/${g.meta.name}`)
    .join(',');
  const ports = push
    .serviceInstances(proxy)
    .map((i) => `${i.servicePort.port}>${i.endpoint.port}`)
    .sort()
    .join(',');
  return `${proxy.namespace}|${gateways}|${ports}|${proxy.metadata.raw.UNPRIVILEGED_POD === 'true' ? 'u' : ''}`;
}

const routerContext = (push: PushContext, proxy: Proxy): GatewayContext => gatewayContext(push, proxy, push.gateways);

/** What a router's listeners bind by its IP mode: its wildcard, and `::` beside 0.0.0.0 when it is dual-stack under ISTIO_DUAL_STACK. */
const bindKey = (push: PushContext, proxy: Proxy): string =>
  `${wildcardAddress(proxy)}${dualStackWildcards(push, proxy, 0).length > 0 ? '+::' : ''}`;

export const routerListenerGenerator: Generator = {
  generate(proxy, _watched, push) {
    return push.derive(
      `LDS|router|${routerKey(push, proxy)}|${bindKey(push, proxy)}|${telemetryViewKey(push, proxy)}|${wasmViewKey(push, proxy)}|${proxy.extensions.key}`,
      (): XdsResource[] =>
        buildGatewayListeners(routerContext(push, proxy)).map((l) => makeResource(l.name, TypeUrl.Listener, toBinary(ListenerSchema, l))),
    );
  },
};

export const routerRouteGenerator: Generator = {
  generate(proxy, watched, push) {
    const all = push.derive(
      `RDS|router|${routerKey(push, proxy)}`,
      () =>
        new Map(
          buildGatewayRoutes(routerContext(push, proxy), 'all').map((rc) => [
            rc.name,
            makeResource(rc.name, TypeUrl.RouteConfiguration, toBinary(RouteConfigurationSchema, rc)),
          ]),
        ),
    );
    if (watched.wildcard && watched.names.size === 0) return [...all.values()];
    return [...watched.names].sort().flatMap((n) => all.get(n) ?? []);
  },
};

/**
 * SDS for gateway `credentialName`s (`kubernetes://<name>`, `kubernetes://<name>-cacert`), as
 * istiod serves them to routers; workload certificates (`default`, `ROOTCA`) come from the node agent.
 */
export function routerSecretGenerator(credentials: (push: PushContext) => CredentialLookup, logger: Logger): Generator {
  return {
    generate(proxy, watched, push) {
      const lookup = push.derive('credentials', () => credentials(push));
      // Gateway API certificateRefs in another namespace need a ReferenceGrant there (as istiod's SecretGen).
      const grants = push.derive('reference-grants', () => new ReferenceGrants(push.config.list('ReferenceGrant')));
      const secrets = buildGatewaySecrets(lookup, { proxy }, watched.names, (from, to, name) =>
        grants.allows('Gateway', from, to, name, 'Secret'),
      );
      // Envoy keeps a listener warming while its certificate is missing: say why, once per push.
      const found = new Set(secrets.map((s) => s.name));
      for (const name of watched.names) {
        if (found.has(name)) continue;
        push.derive(`credential-missing|${proxy.namespace}|${name}`, () => {
          logger.warn('gateway credential not found or unusable', { proxy: proxy.id, resource: name, namespace: proxy.namespace });
          return true;
        });
      }
      return secrets.map((s) => makeResource(s.name, TypeUrl.Secret, toBinary(SecretSchema, s)));
    },
  };
}
