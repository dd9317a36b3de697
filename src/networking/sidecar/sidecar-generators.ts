import { toBinary } from '@bufbuild/protobuf';
import { ListenerSchema } from '../../gen/envoy/config/listener/v3/listener_pb.js';
import { type Proxy, type PushContext, proxyLabelsKey } from '../../model/index.js';
import { type Generator, internResources, joinResources, makeResource, type XdsResource } from '../../xds/index.js';
import { TypeUrl } from '../../xds/type-urls.js';
import { buildOutboundListeners, type OutboundContext } from './outbound-listeners.js';
import { encodeOutboundRouteConfig } from './outbound-routes.js';
import { buildInboundListener } from './inbound-listener.js';
import { inboundSecurity } from './inbound-security.js';
import { encodedHcmTracing, telemetryAppliedKey, telemetryViewKey } from '../telemetry/index.js';
import { listenerWithHcmTracing, withHcmTracing } from '../listener/hcm-tracing-splice.js';
import { inboundPorts } from './sidecar-ingress.js';
import { wasmViewKey } from '../extension/wasm-plugins.js';
import { addressViewKey } from '../service-addresses.js';
import type { Logger } from '../../util/log.js';

function outboundContext(push: PushContext, proxy: Proxy): OutboundContext {
  return { push, proxy, scope: push.sidecarScope(proxy) };
}

/** The workload a sidecar fronts, as its inbound config depends on it: namespace, labels, IPs. */
export function workloadKey(proxy: Proxy): string {
  let key = workloadKeys.get(proxy);
  if (key === undefined) workloadKeys.set(proxy, (key = `${proxy.namespace}|${proxyLabelsKey(proxy)}|${proxy.ipAddresses.join(',')}`));
  return key;
}

/** A proxy's attributes do not change (a reconnect is a new Proxy): its key is spelled once, not once per push. */
const workloadKeys = new WeakMap<Proxy, string>();

/**
 * Sidecar LDS: every listener (Envoy subscribes with a wildcard). Outbound listeners depend on the
 * Sidecar scope and on who asks (namespace for visibility, labels for sourceLabels matches, whether
 * it listens on auto-allocated addresses and of which IP families, its cluster when a service's
 * addresses differ there), so
 * proxies with the same view share one encoded list, and workloads with the same tracing tags one
 * spliced copy of it (withHcmTracing); `virtualInbound` depends on the workload (its ports and
 * policies).
 */
export function sidecarListenerGenerator(logger: Logger): Generator {
  return {
    generate(proxy, _watched, push) {
      const ctx = outboundContext(push, proxy);
      // Built once per scope and Telemetry set; the workload's tracing (its Istio tags) is laid in after.
      const shared = push.derive(
        `LDS|out|${ctx.scope.key}|${push.routeViewKey(proxy)}|${addressViewKey(push, proxy)}|${telemetryAppliedKey(push, proxy)}|${wasmViewKey(push, proxy)}|${proxy.extensions.key}`,
        (): XdsResource[] => buildOutboundListeners(ctx).map((l) => makeResource(l.name, TypeUrl.Listener, toBinary(ListenerSchema, l))),
      );
      const outbound = withHcmTracing(shared, encodedHcmTracing(push, proxy, 'outbound'));
      const inbound = push.derive(
        `LDS|in|${ctx.scope.key}|${workloadKey(proxy)}|${telemetryViewKey(push, proxy)}|${proxy.extensions.key}`,
        (): XdsResource => {
          const ports = inboundPorts(ctx.scope.sidecar, push.serviceInstances(proxy));
          const l = buildInboundListener({ push, proxy, ports, security: inboundSecurity(push, proxy, logger) });
          // Built without tracing, which is laid in encoded (once per workload's tags, not per chain).
          const tracing = encodedHcmTracing(push, proxy, 'inbound');
          const bytes = toBinary(ListenerSchema, l);
          // Alike across replicas: one object, so one joined list per view (see internResources).
          return internResources(makeResource(l.name, TypeUrl.Listener, tracing ? listenerWithHcmTracing(bytes, tracing) : bytes));
        },
      );
      return joinResources(outbound, inbound);
    },
  };
}

/** Sidecar RDS: the `<port>` route configurations the listeners name. */
export const sidecarRouteGenerator: Generator = {
  generate(proxy, watched, push) {
    const ctx = outboundContext(push, proxy);
    const out: XdsResource[] = [];
    for (const name of [...watched.names].sort()) {
      const res = push.derive(`RDS|${ctx.scope.key}|${push.routeViewKey(proxy)}|${addressViewKey(push, proxy)}|${name}`, () => {
        const rc = encodeOutboundRouteConfig(ctx, name);
        return rc ? makeResource(name, TypeUrl.RouteConfiguration, rc) : undefined;
      });
      if (res) out.push(res);
    }
    return out;
  },
};
