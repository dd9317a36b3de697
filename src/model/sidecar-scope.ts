import { type Config, type ConfigSnapshot, hostMatches, inCreationOrder, isVisible, labelsSubsetOf } from '../config/index.js';
import { OutboundTrafficPolicy_Mode } from '../gen/networking/v1alpha3/sidecar_pb.js';
import type { Service } from '../registry/index.js';
import type { MeshConfig } from '../config/index.js';

/** One `namespace/host` entry of a Sidecar egress listener, parsed. */
interface EgressHost {
  /** `*` any namespace, `~` none, else a namespace name (`.` already resolved). */
  readonly namespace: string;
  readonly host: string;
}

/**
 * What a sidecar can see (istiod's SidecarScope): the Sidecar resource that applies to it, the
 * services its egress hosts admit, and its outbound traffic policy. Without a Sidecar, everything
 * visible through exportTo (every namespace, every host). Built once per (push, namespace, Sidecar) and shared.
 */
export interface SidecarScope {
  /** `Sidecar/<ns>/<name>` of the applied resource, or `default/<ns>`: the cache key of what depends on the scope. */
  readonly key: string;
  readonly sidecar: Config<'Sidecar'> | undefined;
  readonly services: readonly Service[];
  readonly outboundTrafficPolicy: MeshConfig['outboundTrafficPolicy'];
  /** Whether a host of a namespace is admitted by the egress hosts (VirtualServices, DestinationRules). */
  admits(namespace: string, host: string): boolean;
}

function parseEgressHosts(sidecar: Config<'Sidecar'> | undefined, proxyNamespace: string): EgressHost[] {
  if (!sidecar || sidecar.spec.egress.length === 0) return [{ namespace: '*', host: '*' }];
  return sidecar.spec.egress.flatMap((eg) =>
    eg.hosts.map((h) => {
      const slash = h.indexOf('/');
      const ns = slash < 0 ? '*' : h.slice(0, slash);
      const host = (slash < 0 ? h : h.slice(slash + 1)).toLowerCase();
      return { namespace: ns === '.' ? proxyNamespace : ns, host };
    }),
  );
}

function selects(sidecar: Config<'Sidecar'>, labels: Readonly<Record<string, string>>): boolean {
  return labelsSubsetOf(sidecar.spec.workloadSelector?.labels ?? {}, labels);
}

/**
 * The Sidecar that applies to a workload, as istiod picks it: one in its namespace whose
 * workloadSelector matches, else its namespace's selector-less one, else the root namespace's
 * selector-less one. Among several, the oldest wins (creation time, then name, as istiod sorts
 * them); the creation-ordered list is computed once per snapshot list, not per proxy.
 */
export function selectSidecar(
  config: ConfigSnapshot,
  rootNamespace: string,
  namespace: string,
  labels: Readonly<Record<string, string>>,
): Config<'Sidecar'> | undefined {
  const own = inCreationOrder(config.list('Sidecar', namespace));
  const withSelector = own.find((s) => s.spec.workloadSelector !== undefined && selects(s, labels));
  if (withSelector) return withSelector;
  const nsDefault = own.find((s) => s.spec.workloadSelector === undefined);
  if (nsDefault) return nsDefault;
  return inCreationOrder(config.list('Sidecar', rootNamespace)).find((s) => s.spec.workloadSelector === undefined);
}

export function buildSidecarScope(
  allServices: readonly Service[],
  mesh: MeshConfig,
  sidecar: Config<'Sidecar'> | undefined,
  namespace: string,
): SidecarScope {
  const egress = parseEgressHosts(sidecar, namespace);
  const admits = (ns: string, host: string): boolean =>
    egress.some((e) => e.namespace !== '~' && (e.namespace === '*' || e.namespace === ns) && hostMatches(e.host, host.toLowerCase()));
  const services = allServices.filter((s) => isVisible(s.exportTo, s.namespace, namespace) && admits(s.namespace, s.hostname));
  const mode = sidecar?.spec.outboundTrafficPolicy?.mode;
  const outboundTrafficPolicy =
    mode === OutboundTrafficPolicy_Mode.REGISTRY_ONLY
      ? 'REGISTRY_ONLY'
      : mode === OutboundTrafficPolicy_Mode.ALLOW_ANY
        ? 'ALLOW_ANY'
        : mesh.outboundTrafficPolicy;
  return {
    key: sidecar ? `Sidecar/${sidecar.meta.namespace}/${sidecar.meta.name}@${namespace}` : `default/${namespace}`,
    sidecar,
    services,
    outboundTrafficPolicy,
    admits,
  };
}
