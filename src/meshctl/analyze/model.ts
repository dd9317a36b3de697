/** What analyzers see: the validated Istio objects and the Kubernetes objects read from the files. */
import type { Config, ConfigError, ConfigOrigin, KindName, MeshNetworks } from '../../config/index.js';
import type { EnvoyFilter } from '../../gen/networking/v1alpha3/envoy_filter_pb.js';
import type { Telemetry } from '../../gen/telemetry/v1alpha1/telemetry_pb.js';
import type { MeshConfig } from '../../gen/mesh/v1alpha1/config_pb.js';
import type { MessageType } from './messages.js';

/** A resource a message is about, as istioctl names it: `Kind namespace/name`. */
export interface ResourceRef {
  readonly kind: string;
  readonly namespace: string;
  readonly name: string;
  readonly origin?: ConfigOrigin;
}

export interface ServicePort {
  readonly name: string;
  readonly appProtocol?: string;
  readonly port: number;
  readonly protocol: string;
  readonly targetPort: string;
}

/** A core/v1 Service from a file. */
export interface K8sService {
  readonly ref: ResourceRef;
  readonly selector: Readonly<Record<string, string>> | undefined;
  readonly ports: readonly ServicePort[];
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  /** `ClusterIP` unless the Service says otherwise. */
  readonly type: string;
}

/** A core/v1 Pod (labels are what selectors and subsets match; containers what injection checks). */
export interface K8sPod {
  readonly ref: ResourceRef;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  /** Names of the containers and of the init containers (a native sidecar proxy is one). */
  readonly containers: readonly string[];
  readonly initContainers: readonly string[];
  readonly hostNetwork: boolean;
}

/** A core/v1 Namespace (cluster-scoped: its ref's namespace is empty). */
export interface K8sNamespace {
  readonly ref: ResourceRef;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
}

export interface K8sContainer {
  readonly name: string;
  readonly image: string;
}

/** An apps/v1 Deployment: its own metadata and its pod template's. */
export interface K8sDeployment {
  readonly ref: ResourceRef;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  readonly template: {
    readonly labels: Readonly<Record<string, string>>;
    readonly annotations: Readonly<Record<string, string>>;
    readonly containers: readonly K8sContainer[];
  };
}

/** MeshNetworks (istio/api mesh/v1alpha1/network.proto): the one parser and type of src/config/mesh/. */
export type { MeshNetworks };

/**
 * Any Kubernetes object of the input that is not Istio or Gateway API config (ConfigMaps, Nodes,
 * Secrets, webhook configurations, CRDs, and the Services, Pods and Deployments above too), with
 * its body as read: analyzers that need a field the typed views leave out read it here.
 */
export interface K8sObject {
  readonly ref: ResourceRef;
  readonly apiVersion: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  readonly body: Readonly<Record<string, unknown>>;
}

/**
 * Another cluster of a multi-cluster mesh (istioctl's --remote-contexts): the Services its API
 * server holds. The analyzed objects (files, `-k`) are the primary cluster's, which istioctl
 * calls `default`.
 */
export interface RemoteCluster {
  /** The cluster's id: its kubeconfig context name, as istioctl names it. */
  readonly id: string;
  readonly services: readonly K8sObject[];
}

/** istioctl's id for the primary cluster, where files and the `-k` cluster's objects belong. */
export const PRIMARY_CLUSTER = 'default';

/** An Istio object of a kind meshpilot does not serve but istioctl analyzes (EnvoyFilter, Telemetry). */
export interface AnalysisObject<T> {
  readonly ref: ResourceRef;
  readonly spec: T;
}

export interface InvalidObject {
  readonly ref: ResourceRef;
  readonly errors: readonly ConfigError[];
}

/** istiod's validation warnings of one object (deprecated fields, settings without effect): valid or not, it is analyzed. */
export interface ObjectWarnings {
  readonly ref: ResourceRef;
  readonly warnings: readonly ConfigError[];
}

export interface Snapshot {
  readonly configs: readonly Config[];
  readonly services: readonly K8sService[];
  readonly pods: readonly K8sPod[];
  readonly namespaces: readonly K8sNamespace[];
  readonly deployments: readonly K8sDeployment[];
  readonly envoyFilters: readonly AnalysisObject<EnvoyFilter>[];
  readonly telemetries: readonly AnalysisObject<Telemetry>[];
  readonly objects: readonly K8sObject[];
  /** Every object of the input that carries a `status` (Istio and Gateway API kinds too), by its own kind name. */
  readonly statusObjects: readonly K8sObject[];
  /** The mesh config analyzed (istioctl's --meshConfigFile over Istio's defaults). */
  readonly meshConfig: MeshConfig;
  /** istioctl's --meshNetworksFile, when given. */
  readonly meshNetworks?: AnalysisObject<MeshNetworks>;
  /** Documents of served kinds that failed validation (the SchemaValidationError analyzer reports them). */
  readonly invalid: readonly InvalidObject[];
  /** Validation warnings of the served kinds' documents (the SchemaWarning analyzer reports them). */
  readonly warnings: readonly ObjectWarnings[];
  /** Other clusters of the mesh (empty unless --remote-contexts names some). */
  readonly remoteClusters: readonly RemoteCluster[];
  /** Istio's root namespace (mesh-wide policies live there). */
  readonly rootNamespace: string;
  readonly domain: string;
  /** Line of a field in a resource's document (`metadata.name`, `spec.ports[0]`), when read from a file. */
  lineOf(ref: ResourceRef, path: string): number | undefined;
}

export interface Message {
  readonly type: MessageType;
  readonly resource: ResourceRef;
  readonly args: readonly unknown[];
  /** The line the message points at, when more precise than the object's start. */
  readonly line?: number;
}

export type Report = (m: Message) => void;

export interface Analyzer {
  /** Istio's analyzer name, e.g. `virtualservice.DestinationHostAnalyzer`. */
  readonly name: string;
  readonly description: string;
  readonly messages: readonly MessageType[];
  analyze(s: Snapshot, report: Report): void;
}

export function refOf(c: Config): ResourceRef {
  const m = c.meta;
  return m.origin
    ? { kind: m.kind, namespace: m.namespace, name: m.name, origin: m.origin }
    : { kind: m.kind, namespace: m.namespace, name: m.name };
}

export function configsOf<K extends KindName>(s: Snapshot, kind: K): Config<K>[] {
  return s.configs.filter((c): c is Config<K> => c.meta.kind === kind);
}

/** `ns/name`, istioctl's FullName.String(). */
export const fullName = (r: ResourceRef): string => `${r.namespace}/${r.name}`;

/** `{ line }` of a field for a Message, or nothing when the field's line is unknown. */
export function at(s: Snapshot, ref: ResourceRef, path: string): { line?: number } {
  const line = s.lineOf(ref, path);
  return line !== undefined ? { line } : {};
}

/** The objects of one kind among `objects` (`ConfigMap`, `MutatingWebhookConfiguration`, …). */
export function objectsOf(s: Snapshot, kind: string): K8sObject[] {
  return s.objects.filter((o) => o.ref.kind === kind);
}
