/**
 * Writing objects through the API server in tests: Istio custom resources (no validating webhook
 * is installed, so only the CRD schema stands between a test and the cluster), and the core
 * objects the Kubernetes registry reads (Services, EndpointSlices, Pods with status, Nodes).
 */
import {
  CoreV1Api,
  CustomObjectsApi,
  DiscoveryV1Api,
  type KubeConfig,
  type V1EndpointSlice,
  type V1Node,
  type V1Pod,
  type V1PodStatus,
  type V1Service,
} from '@kubernetes/client-node';
import { KINDS, type KindName } from '../../src/config/kinds.js';
import type { JsonPatchOp } from '../../src/util/json-patch.js';

/** An Istio object as the API takes it (apiVersion decides the version written). */
export interface IstioObject {
  apiVersion: string;
  kind: KindName;
  metadata: { name: string; namespace: string; labels?: Record<string, string> };
  spec: Record<string, unknown>;
}

function resource(kind: KindName, apiVersion?: string): { group: string; version: string; plural: string } {
  const info = KINDS[kind];
  const version = apiVersion?.split('/')[1] ?? info.versions[0] ?? 'v1';
  return { group: info.group, version, plural: info.plural };
}

export class IstioClient {
  readonly #api: CustomObjectsApi;

  constructor(kc: KubeConfig) {
    this.#api = kc.makeApiClient(CustomObjectsApi);
  }

  async create(obj: IstioObject): Promise<void> {
    await this.#api.createNamespacedCustomObject({ ...resource(obj.kind, obj.apiVersion), namespace: obj.metadata.namespace, body: obj });
  }

  async patch(kind: KindName, namespace: string, name: string, ops: JsonPatchOp[]): Promise<void> {
    await this.#api.patchNamespacedCustomObject({ ...resource(kind), namespace, name, body: ops });
  }

  async delete(kind: KindName, namespace: string, name: string): Promise<void> {
    await this.#api.deleteNamespacedCustomObject({ ...resource(kind), namespace, name });
  }
}

/** A Ready, Running pod status with these IPs. */
export function readyStatus(...ips: string[]): V1PodStatus {
  return { phase: 'Running', podIP: ips[0] ?? '', podIPs: ips.map((ip) => ({ ip })), conditions: [{ type: 'Ready', status: 'True' }] };
}

export class CoreClient {
  readonly core: CoreV1Api;
  readonly discovery: DiscoveryV1Api;

  constructor(kc: KubeConfig) {
    this.core = kc.makeApiClient(CoreV1Api);
    this.discovery = kc.makeApiClient(DiscoveryV1Api);
  }

  async node(name: string, labels: Record<string, string>): Promise<V1Node> {
    return this.core.createNode({ body: { metadata: { name, labels } } });
  }

  async service(namespace: string, body: V1Service): Promise<V1Service> {
    return this.core.createNamespacedService({ namespace, body });
  }

  async slice(namespace: string, body: V1EndpointSlice): Promise<V1EndpointSlice> {
    return this.discovery.createNamespacedEndpointSlice({ namespace, body });
  }

  /** Creates a pod, then writes its status (nothing else would: no kubelet runs). */
  async pod(namespace: string, body: V1Pod, status: V1PodStatus): Promise<V1Pod> {
    const created = await this.core.createNamespacedPod({ namespace, body });
    return this.core.replaceNamespacedPodStatus({ namespace, name: created.metadata?.name ?? '', body: { ...created, status } });
  }
}
