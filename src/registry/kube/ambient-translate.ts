/**
 * Kubernetes Pods and Services → the plain records ambient's workload discovery reads
 * (registry/ambient-model.ts), as istiod's ambient index reads them
 * (pilot/pkg/serviceregistry/ambient/workloads.go podWorkloadBuilder, services.go constructService).
 */
import type { V1EndpointSlice, V1Node, V1Pod, V1Service } from '@kubernetes/client-node';
import type { AmbientEndpointSlice, AmbientKubeService, AmbientPod } from '../ambient-model.js';
import { podIps, podLocality } from './translate.js';

const WORKLOAD_NAME_LABEL = 'service.istio.io/workload-name';

/** istiod's CheckPodTerminal: a pod that finished (or is finishing) keeps no workload. */
function podTerminal(pod: V1Pod): boolean {
  const phase = pod.status?.phase;
  return phase === 'Succeeded' || phase === 'Failed';
}

/**
 * istiod's GetWorkloadMetaFromPod: the `service.istio.io/workload-name` label, else the
 * controller's name (a ReplicaSet's Deployment by its pod-template-hash), else the pod's name.
 */
export function podWorkloadName(pod: V1Pod): string {
  const labels = pod.metadata?.labels ?? {};
  const named = labels[WORKLOAD_NAME_LABEL];
  if (named !== undefined) return named;
  let name = pod.metadata?.name ?? '';
  if ((pod.metadata?.generateName ?? '') !== '') {
    const ref = (pod.metadata?.ownerReferences ?? []).find((r) => r.controller === true);
    if (ref) {
      name = ref.name;
      const hash = labels['pod-template-hash'];
      if (ref.kind === 'ReplicaSet' && hash && ref.name.endsWith(hash)) name = ref.name.slice(0, -(hash.length + 1));
    }
  }
  return name;
}

/** A pod as a workload of ambient's index; undefined when it has no IP or is terminal (istiod builds none). */
export function ambientPod(pod: V1Pod, node: V1Node | undefined): AmbientPod | undefined {
  if (podTerminal(pod)) return undefined;
  const addresses = podIps(pod);
  if (addresses.length === 0) return undefined;
  const ready = (pod.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
  const deleting = pod.metadata?.deletionTimestamp !== undefined && pod.metadata.deletionTimestamp !== null;
  // istiod takes a pod's locality from its node alone (a pod's locality label counts for its endpoints).
  const locality = podLocality(undefined, node);
  const known = locality.region !== '' || locality.zone !== '' || locality.subzone !== '';
  return {
    name: pod.metadata?.name ?? '',
    namespace: pod.metadata?.namespace ?? '',
    labels: pod.metadata?.labels ?? {},
    annotations: pod.metadata?.annotations ?? {},
    serviceAccount: pod.spec?.serviceAccountName ?? '',
    nodeName: pod.spec?.nodeName ?? '',
    addresses,
    healthy: ready && !deleting,
    hostNetwork: pod.spec?.hostNetwork === true,
    locality: known ? locality : undefined,
    workloadName: podWorkloadName(pod),
    containerPorts: (pod.spec?.containers ?? []).flatMap((c) =>
      (c.ports ?? []).flatMap((p) => (p.name ? [{ name: p.name, port: p.containerPort }] : [])),
    ),
  };
}

/** A Service as the workload API carries it. */
export function ambientService(svc: V1Service): AmbientKubeService {
  const spec = svc.spec;
  const ips = spec?.clusterIPs && spec.clusterIPs.length > 0 ? spec.clusterIPs : spec?.clusterIP ? [spec.clusterIP] : [];
  const selector = spec?.selector;
  return {
    name: svc.metadata?.name ?? '',
    namespace: svc.metadata?.namespace ?? '',
    labels: svc.metadata?.labels ?? {},
    annotations: svc.metadata?.annotations ?? {},
    selector: selector && Object.keys(selector).length > 0 ? selector : undefined,
    clusterIps: ips.filter((ip) => ip !== '' && ip !== 'None'),
    ports: (spec?.ports ?? []).map((p) => ({
      name: p.name ?? '',
      port: p.port,
      targetPort:
        p.targetPort === undefined
          ? p.port
          : typeof p.targetPort === 'number'
            ? p.targetPort
            : /^\d+$/.test(p.targetPort)
              ? Number(p.targetPort)
              : p.targetPort,
      protocol: p.protocol ?? 'TCP',
      ...(p.appProtocol !== undefined ? { appProtocol: p.appProtocol } : {}),
    })),
    ipFamilies: spec?.ipFamilies ?? [],
    internalTrafficPolicyLocal: spec?.internalTrafficPolicy === 'Local',
    publishNotReadyAddresses: spec?.publishNotReadyAddresses === true,
    externalName: spec?.type === 'ExternalName',
    ...(spec?.trafficDistribution ? { trafficDistribution: spec.trafficDistribution } : {}),
    ...(svc.metadata?.creationTimestamp ? { created: new Date(svc.metadata.creationTimestamp).getTime() } : {}),
  };
}

/**
 * An EndpointSlice's endpoints that no pod backs (istiod's endpointSlicesBuilder: a Service without
 * selector, or one whose addresses were written by hand); undefined for a slice of no Service, an
 * FQDN slice, or one with no such endpoint.
 */
export function ambientEndpointSlice(slice: V1EndpointSlice): AmbientEndpointSlice | undefined {
  const serviceName = slice.metadata?.labels?.['kubernetes.io/service-name'];
  if (serviceName === undefined || slice.addressType === 'FQDN') return undefined;
  const endpoints = (slice.endpoints ?? [])
    .filter((e) => e.targetRef?.kind !== 'Pod' && e.addresses.length > 0)
    .map((e) => ({ addresses: e.addresses, ready: e.conditions?.ready !== false }));
  if (endpoints.length === 0) return undefined;
  return {
    name: slice.metadata?.name ?? '',
    namespace: slice.metadata?.namespace ?? '',
    serviceName,
    ports: (slice.ports ?? []).flatMap((p) =>
      p.name !== undefined && p.port !== undefined ? [{ name: p.name, port: p.port, protocol: p.protocol ?? 'TCP' }] : [],
    ),
    endpoints,
  };
}
