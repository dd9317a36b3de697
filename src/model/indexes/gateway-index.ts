import { clone } from '@bufbuild/protobuf';
import {
  byCreationTime,
  configKeyString,
  type Config,
  type ConfigKey,
  type ConfigSnapshot,
  isVisible,
  labelsSubsetOf,
} from '../../config/index.js';
import { VirtualServiceSchema, type VirtualService } from '../../gen/networking/v1alpha3/virtual_service_pb.js';
import { settleLists } from './config-order.js';
import { GATEWAY_NAME_ANNOTATION, GATEWAY_SERVICE_ANNOTATION } from '../gateway-api/kube-gateways.js';
import { MESH_GATEWAY } from './virtual-service-index.js';
import { GATEWAY_NAME_LABEL } from '../../config/constants.js';

/** Config made from other kinds (Gateway API) that the index holds beside the user's. */
export interface GeneratedGatewayConfig {
  readonly gateways: readonly Config<'Gateway'>[];
  readonly virtualServices: readonly Config<'VirtualService'>[];
}
const EMPTY_GENERATED: GeneratedGatewayConfig = { gateways: [], virtualServices: [] };

/**
 * istiod's resolveGatewayName: a VirtualService names a gateway `name` (its own namespace),
 * `./name`, `ns/name`, or in the legacy FQDN form `name.ns[.svc.<domain>]`; all become `ns/name`.
 * `mesh`, the sidecar pseudo-gateway, stays as it is.
 */
export function resolveGatewayName(name: string, configNamespace: string): string {
  if (name === MESH_GATEWAY) return name;
  if (name.includes('/')) return name.startsWith('./') ? `${configNamespace}/${name.slice(2)}` : name;
  const dot = name.indexOf('.');
  if (dot < 0) return `${configNamespace}/${name}`;
  const rest = name.slice(dot + 1);
  const nsEnd = rest.indexOf('.');
  return `${nsEnd < 0 ? rest : rest.slice(0, nsEnd)}/${name.slice(0, dot)}`;
}

/**
 * Gateways and the VirtualServices bound to them. Gateways select their proxies by labels in every
 * namespace (istiod's default, PILOT_SCOPE_GATEWAY_TO_NAMESPACE off); a Gateway without a selector
 * applies to every router. Both are ordered as istiod orders them: creation time, then name, then
 * namespace (config/creation-order.ts).
 *
 * VirtualServices are held as istiod holds them (ResolveVirtualServiceShortnames): every gateway
 * name in `gateways` and in `http`/`tcp`/`tls` match conditions resolved to `ns/name`, on a copy
 * when anything changed, so a match may compare names directly.
 */
export class GatewayIndex {
  private constructor(
    private readonly gateways: readonly Config<'Gateway'>[],
    /** Resolved VirtualServices per gateway `ns/name`, oldest first (istiod's order). */
    private readonly byGateway: ReadonlyMap<string, readonly Config<'VirtualService'>[]>,
    /** Every resolved VirtualService bound to some gateway, by configKeyString of the original. */
    private readonly byKey: ReadonlyMap<string, Config<'VirtualService'>>,
  ) {}

  /** `generated`: internal Gateways and VirtualServices from Gateway API, indexed beside the user's. */
  static build(config: ConfigSnapshot, generated: GeneratedGatewayConfig = EMPTY_GENERATED): GatewayIndex {
    const byGateway = new Map<string, Config<'VirtualService'>[]>();
    const byKey = new Map<string, Config<'VirtualService'>>();
    for (const vs of [...config.byKind('VirtualService').values(), ...generated.virtualServices].sort(byCreationTime)) {
      const resolved = withResolvedGateways(vs);
      const gateways = boundGateways(resolved);
      if (gateways.length > 0) byKey.set(configKeyString(vs.meta), resolved);
      for (const gw of gateways) {
        const list = byGateway.get(gw);
        if (list) list.push(resolved);
        else byGateway.set(gw, [resolved]);
      }
    }
    return new GatewayIndex([...config.byKind('Gateway').values(), ...generated.gateways].sort(byCreationTime), byGateway, byKey);
  }

  /** The index after `changed` VirtualServices took their versions in `config`; Gateways as they were. */
  withVirtualServiceChanges(config: ConfigSnapshot, changed: readonly ConfigKey[]): GatewayIndex {
    const byGateway = new Map(this.byGateway);
    const byKey = new Map(this.byKey);
    const touched = new Set<string>();
    for (const key of changed) {
      const ks = configKeyString(key);
      const old = byKey.get(ks);
      if (old) {
        byKey.delete(ks);
        for (const gw of boundGateways(old)) {
          touched.add(gw);
          byGateway.set(
            gw,
            (byGateway.get(gw) ?? []).filter((v) => v !== old),
          );
        }
      }
      const vs = config.get('VirtualService', key.namespace, key.name);
      if (!vs) continue;
      const resolved = withResolvedGateways(vs);
      const gateways = boundGateways(resolved);
      if (gateways.length > 0) byKey.set(ks, resolved);
      for (const gw of gateways) {
        touched.add(gw);
        byGateway.set(gw, [...(byGateway.get(gw) ?? []), resolved]);
      }
    }
    settleLists(byGateway, touched, byCreationTime);
    return new GatewayIndex(this.gateways, byGateway, byKey);
  }

  /**
   * Gateways whose selector matches the proxy's labels (all namespaces, istiod's default). A
   * Gateway API gateway (annotated with its services) applies, as in istiod, to proxies in its
   * namespace that serve one of those services — or carry its `gateway-name` label (the label
   * istiod's deployment gives the pods, which also holds where no Service is known, e.g. files).
   */
  forProxy(
    labels: Readonly<Record<string, string>>,
    proxy?: { readonly namespace: string; readonly serviceHosts: ReadonlySet<string> },
  ): readonly Config<'Gateway'>[] {
    return this.gateways.filter((g) => {
      const services = g.meta.annotations[GATEWAY_SERVICE_ANNOTATION];
      if (services === undefined) return labelsSubsetOf(g.spec.selector, labels);
      if (!proxy || proxy.namespace !== g.meta.namespace) return false;
      const name = g.meta.annotations[GATEWAY_NAME_ANNOTATION];
      return (name !== undefined && labels[GATEWAY_NAME_LABEL] === name) || services.split(',').some((h) => proxy.serviceHosts.has(h));
    });
  }

  /**
   * VirtualServices bound to the gateway `ns/name` and visible (exportTo) in `namespace` — istiod
   * asks with the gateway proxy's namespace — in namespace/name order.
   */
  virtualServicesFor(gateway: string, namespace: string): readonly Config<'VirtualService'>[] {
    return (this.byGateway.get(gateway) ?? []).filter((vs) => isVisible(vs.spec.exportTo, vs.meta.namespace, namespace));
  }
}

/** The gateways (`ns/name`, each once) a resolved VirtualService is bound to, `mesh` aside. */
function boundGateways(resolved: Config<'VirtualService'>): string[] {
  return [...new Set(resolved.spec.gateways)].filter((gw) => gw !== MESH_GATEWAY);
}

/** The VirtualService with every gateway reference as `ns/name` (a copy only when one changes). */
function withResolvedGateways(vs: Config<'VirtualService'>): Config<'VirtualService'> {
  const ns = vs.meta.namespace;
  const resolve = (names: readonly string[]): boolean => names.some((g) => resolveGatewayName(g, ns) !== g);
  const spec = vs.spec;
  const matchLists = [...spec.http.map((r) => r.match), ...spec.tcp.map((r) => r.match), ...spec.tls.map((r) => r.match)];
  if (!resolve(spec.gateways) && !matchLists.some((ms) => ms.some((m) => resolve(m.gateways)))) return vs;
  const copy: VirtualService = clone(VirtualServiceSchema, spec);
  const fix = (names: string[]): void => {
    names.forEach((g, i) => (names[i] = resolveGatewayName(g, ns)));
  };
  fix(copy.gateways);
  for (const r of copy.http) for (const m of r.match) fix(m.gateways);
  for (const r of copy.tcp) for (const m of r.match) fix(m.gateways);
  for (const r of copy.tls) for (const m of r.match) fix(m.gateways);
  return { meta: vs.meta, spec: copy };
}
