import { type Proxy, type PushContext, envoyFilterRegistries } from '../../model/index.js';
import type { Logger } from '../../util/log.js';
import { type Generator, formatViolations, validateMessage } from '../../xds/index.js';
import { TypeUrl } from '../../xds/type-urls.js';
import { TypedExtensionConfigSchema, type TypedExtensionConfig } from '../../gen/envoy/config/core/v3/extension_pb.js';
import { patchClusterResources, patchListenerResources, patchRouteResources, type PatchedList, type PatchProblem } from './apply.js';
import { insertedExtensionConfigs } from './extension-patch.js';
import { parseSubsetKey, type GatewayPortMap } from './match.js';

/** Problems already reported per proxy (a proxy hears about one problem once, not at every push). */
const reported = new WeakMap<Proxy, Set<string>>();

function report(logger: Logger, proxy: Proxy, problems: readonly PatchProblem[], decodeErrors: readonly string[]): void {
  let seen = reported.get(proxy);
  if (!seen) reported.set(proxy, (seen = new Set()));
  for (const p of problems) {
    const id = `${p.resource}|${p.filters.join(',')}|${p.reason}`;
    if (seen.has(id)) continue;
    seen.add(id);
    logger.warn('EnvoyFilter patch makes an invalid resource: sending it unpatched', {
      proxy: proxy.id,
      envoyFilters: p.filters.join(','),
      resource: p.resource,
      reason: p.reason,
    });
  }
  for (const e of decodeErrors) {
    if (seen.has(e)) continue;
    seen.add(e);
    logger.warn('EnvoyFilter patch value cannot be decoded: patch skipped', { proxy: proxy.id, envoyFilter: e });
  }
}

/** The service hostnames behind a sidecar's `inbound|<port>||` cluster (clusterMatch's service for inbound). */
function inboundHosts(push: PushContext, proxy: Proxy): (name: string) => readonly string[] {
  return (name) => {
    const port = parseSubsetKey(name).port;
    return [
      ...new Set(
        push
          .serviceInstances(proxy)
          .filter((i) => i.endpoint.port === port)
          .map((i) => i.service.hostname),
      ),
    ];
  };
}

/** A router's target ports and the Service ports that reach each (route names carry the target port). */
function gatewayPortMap(push: PushContext, proxy: Proxy): GatewayPortMap {
  const out = new Map<number, Set<number>>();
  for (const i of push.serviceInstances(proxy)) {
    const set = out.get(i.endpoint.port) ?? new Set<number>();
    set.add(i.servicePort.port);
    out.set(i.endpoint.port, set);
  }
  return out;
}

/**
 * Wraps an Envoy LDS, RDS or CDS generator: the proxy's EnvoyFilter patches (selected in the push
 * context) are applied to what it generated. Proxies no EnvoyFilter selects get the inner output
 * untouched (the same cached resources); patched results are shared by proxies with the same
 * patches. A resource the patches make invalid is sent unpatched and reported for that proxy.
 */
export function withEnvoyFilters(inner: Generator, typeUrl: string, router: boolean, logger: Logger): Generator {
  return {
    generate(proxy, watched, push, req) {
      const base = inner.generate(proxy, watched, push, req);
      const patches = push.envoyFilters.forProxy(proxy);
      if (!patches) return base;
      let out: PatchedList;
      if (typeUrl === TypeUrl.Listener) out = patchListenerResources(router, patches, base);
      else if (typeUrl === TypeUrl.RouteConfiguration)
        out = patchRouteResources(router, patches, base, router ? gatewayPortMap(push, proxy) : undefined);
      else if (typeUrl === TypeUrl.Cluster) out = patchClusterResources(router, patches, base, inboundHosts(push, proxy));
      else return base;
      const decodeErrors = push.envoyFilters.errors.filter((e) => patches.filters.some((f) => e.startsWith(`${f}: `)));
      if (out.problems.length > 0 || decodeErrors.length > 0) report(logger, proxy, out.problems, decodeErrors);
      return out.resources;
    },
  };
}

/**
 * ECDS from EnvoyFilters (istiod's InsertedExtensionConfigurations): EXTENSION_CONFIG ADDs whose
 * name the proxy asked for. One that breaks Envoy's rules is left out and reported for that proxy.
 */
export function envoyFilterEcdsSource(
  logger: Logger,
): (push: PushContext, proxy: Proxy, names: readonly string[]) => readonly TypedExtensionConfig[] {
  return (push, proxy, names) => {
    const patches = push.envoyFilters.forProxy(proxy);
    if (!patches) return [];
    const run = { patches: patches.byApplyTo, registry: envoyFilterRegistries().json, touched: new Set<string>() };
    const problems: PatchProblem[] = [];
    const out = insertedExtensionConfigs(run, names).filter((ec) => {
      const violations = validateMessage(TypedExtensionConfigSchema, ec, envoyFilterRegistries().pgv);
      if (violations.length > 0)
        problems.push({ resource: `extension config ${ec.name} (added)`, filters: [...run.touched], reason: formatViolations(violations) });
      return violations.length === 0;
    });
    if (problems.length > 0) report(logger, proxy, problems, []);
    return out;
  };
}
