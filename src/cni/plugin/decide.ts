import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { AnnotationDefaults } from '../annotations.js';
import type { PodAddress } from '../probe.js';
import { INIT_CONTAINER, PROXY_CONTAINER, SIDECAR_INJECT, SIDECAR_STATUS_ANNOTATION } from '../../config/constants.js';

/**
 * Whether the plugin programs a pod, with istio-cni's checks and in its order: excluded namespace,
 * an istio-init init container (it captures by itself), DISABLE_ENVOY, no istio-proxy container,
 * a proxy that is not a sidecar, `sidecar.istio.io/inject: "false"` (label, else annotation), no
 * `sidecar.istio.io/status`.
 */

/**
 * `expectNone`: the pod must have no capture at all (CHECK verifies there are no ISTIO_* chains);
 * false when an istio-init init container programs the capture itself.
 */
export type Decision =
  | { readonly skip: string; readonly expectNone: boolean }
  | { readonly capture: AnnotationDefaults; readonly annotations: Readonly<Record<string, string>> };

/** Go's strconv.ParseBool; undefined when it would fail (istio-cni then ignores the value). */
function goBool(v: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(v)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(v)) return false;
  return undefined;
}

/** The proxy type: the second argument when the first is `proxy` (`proxy sidecar …`), as istio-cni reads it. */
function proxyType(c: V1Container): string {
  const args = c.args ?? [];
  return args.length >= 2 && args[0] === 'proxy' ? (args[1] ?? '') : '';
}

function literalEnv(c: V1Container): Record<string, string> {
  const env: Record<string, string> = {};
  for (const e of c.env ?? []) if (e.value !== undefined) env[e.name] = e.value;
  return env;
}

export function namespaceExcluded(namespace: string, excluded: readonly string[]): boolean {
  return excluded.includes(namespace);
}

/** The decision for a pod read from the API; `addresses` are the primary plugin's (prevResult) IPs. */
export function decideForPod(pod: V1Pod, addresses: readonly PodAddress[]): Decision {
  const annotations = pod.metadata?.annotations ?? {};
  const containers = pod.spec?.containers ?? [];
  const inits = pod.spec?.initContainers ?? [];
  // A native sidecar is an init container named istio-proxy.
  const proxy = containers.find((c) => c.name === PROXY_CONTAINER) ?? inits.find((c) => c.name === PROXY_CONTAINER);
  // istio-cni looks for istio-init among all of the pod's containers.
  const hasInit = [...inits, ...containers].some((c) => c.name === INIT_CONTAINER);
  const skip = (why: string): Decision => ({ skip: why, expectNone: !hasInit });
  // istio-cni's order (cni/pkg/plugin/plugin.go doAddRun), so the reason logged is the same.
  if (hasInit) return skip(`has an ${INIT_CONTAINER} init container, which programs the capture itself`);
  const env = proxy ? literalEnv(proxy) : {};
  if (env.DISABLE_ENVOY !== undefined && goBool(env.DISABLE_ENVOY) === true) return skip(`${PROXY_CONTAINER} has DISABLE_ENVOY=true`);
  if (!proxy) return skip(`no ${PROXY_CONTAINER} container`);
  const type = proxyType(proxy);
  if (type !== '' && type !== 'sidecar') return skip(`proxy type is "${type}", not sidecar`);
  // The label is the newer API: when both are there, istio-cni goes by the label.
  const label = pod.metadata?.labels?.[SIDECAR_INJECT];
  const inject = label ?? annotations[SIDECAR_INJECT];
  if (inject !== undefined && goBool(inject) === false)
    return skip(`${label !== undefined ? 'labelled' : 'annotated'} ${SIDECAR_INJECT}: "${inject}"`);
  if (annotations[SIDECAR_STATUS_ANNOTATION] === undefined) return skip(`no ${SIDECAR_STATUS_ANNOTATION} annotation (not injected)`);
  const sc = proxy.securityContext;
  const capture: AnnotationDefaults = {
    addresses,
    proxyEnv: env,
    ...(sc?.runAsUser !== undefined ? { proxyUid: sc.runAsUser } : {}),
    ...(sc?.runAsGroup !== undefined ? { proxyGid: sc.runAsGroup } : {}),
  };
  return { capture, annotations };
}

/** The pod's IPs from a CNI result (any version: `ips[].address`, 0.3+ form "10.0.0.5/24"). */
export function resultAddresses(prevResult: unknown): PodAddress[] {
  const ips = (prevResult as { ips?: unknown } | undefined)?.ips;
  if (!Array.isArray(ips)) return [];
  const out: PodAddress[] = [];
  for (const ip of ips) {
    const a = (ip as { address?: unknown }).address;
    if (typeof a !== 'string') continue;
    const address = a.split('/')[0] ?? '';
    out.push({ address, family: address.includes(':') ? 6 : 4 });
  }
  return out;
}
