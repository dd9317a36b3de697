/**
 * What the ambient index (src/model/ambient) reads of Kubernetes besides the mesh's services:
 * every pod that has an IP (ready or not: ztunnel needs unready pods too, marked UNHEALTHY), the
 * Services with the fields the workload API carries, and namespace labels (dataplane mode,
 * waypoint use). Plain data, shared between snapshots: an entry that did not change is the same
 * object in the next snapshot, so the index re-derives only what differs (by identity).
 */
import type { Locality } from './model.js';

/** A named container port (for a Service's named targetPort). */
export interface AmbientContainerPort {
  readonly name: string;
  readonly port: number;
}

/** One non-terminal pod with at least one IP. */
export interface AmbientPod {
  readonly name: string;
  readonly namespace: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  readonly serviceAccount: string;
  readonly nodeName: string;
  readonly addresses: readonly string[];
  /** Ready condition true and not being deleted (HEALTHY), else UNHEALTHY. */
  readonly healthy: boolean;
  readonly hostNetwork: boolean;
  /** The node's (or the pod's locality label's) region/zone/subzone; undefined when unknown. */
  readonly locality: Locality | undefined;
  /** The controller's workload name (a Deployment for a ReplicaSet's pods), istiod's GetDeployMetaFromPod. */
  readonly workloadName: string;
  readonly containerPorts: readonly AmbientContainerPort[];
}

export interface AmbientServicePort {
  readonly name: string;
  readonly port: number;
  /** Numeric targetPort, or the name of a container port. */
  readonly targetPort: number | string;
  readonly protocol: string;
  readonly appProtocol?: string;
}

/** One Kubernetes Service as the workload API needs it. */
export interface AmbientKubeService {
  readonly name: string;
  readonly namespace: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  /** Undefined for a Service without a selector (its endpoints come from EndpointSlices). */
  readonly selector: Readonly<Record<string, string>> | undefined;
  /** Cluster IPs (`None` left out). */
  readonly clusterIps: readonly string[];
  readonly ports: readonly AmbientServicePort[];
  readonly ipFamilies: readonly string[];
  readonly internalTrafficPolicyLocal: boolean;
  readonly publishNotReadyAddresses: boolean;
  /** `type: ExternalName` (ambient serves none, as istiod). */
  readonly externalName: boolean;
  readonly trafficDistribution?: string;
  /** metadata.creationTimestamp in ms (0 unknown): a waypoint's services are ordered by it, as istiod's. */
  readonly created?: number;
}

/** One endpoint of an EndpointSlice that no pod backs (a Service without selector). */
export interface AmbientSliceEndpoint {
  readonly addresses: readonly string[];
  /** The Ready condition (absent counts as ready). */
  readonly ready: boolean;
}

/** An EndpointSlice of a Service (IP addresses), with its endpoints that name no pod. */
export interface AmbientEndpointSlice {
  readonly name: string;
  readonly namespace: string;
  /** The Service it belongs to (`kubernetes.io/service-name`). */
  readonly serviceName: string;
  readonly ports: readonly { readonly name: string; readonly port: number; readonly protocol: string }[];
  readonly endpoints: readonly AmbientSliceEndpoint[];
}

/** The Kubernetes side of ambient at one moment (keys `namespace/name`; namespaces by name). */
export interface AmbientKubeState {
  readonly pods: ReadonlyMap<string, AmbientPod>;
  readonly services: ReadonlyMap<string, AmbientKubeService>;
  readonly namespaces: ReadonlyMap<string, Readonly<Record<string, string>>>;
  /** EndpointSlices with endpoints no pod backs; none when absent. */
  readonly endpointSlices?: ReadonlyMap<string, AmbientEndpointSlice>;
}

export const EMPTY_AMBIENT_STATE: AmbientKubeState = { pods: new Map(), services: new Map(), namespaces: new Map() };
