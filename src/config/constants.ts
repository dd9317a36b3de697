/**
 * Istio's well-known names, the one home of each: labels, annotations, container names and
 * defaults (istiod's pkg/config/constants and istio/api's `label` and `annotation` packages).
 * Tests and golden data may spell them out; code imports them from here.
 */

// Defaults.

/** The default DNS domain suffix of Kubernetes services (`svc.cluster.local`). */
export const DEFAULT_DOMAIN_SUFFIX = 'cluster.local';
/** The default SPIFFE trust domain. */
export const DEFAULT_TRUST_DOMAIN = 'cluster.local';
/** The namespace Istio is installed in by default (and the default mesh root namespace). */
export const ISTIO_SYSTEM_NAMESPACE = 'istio-system';
/** The ConfigMap carrying the mesh root certificate into every namespace. */
export const ROOT_CERT_CONFIGMAP = 'istio-ca-root-cert';

// Containers of an injected pod.

/** The sidecar container. */
export const PROXY_CONTAINER = 'istio-proxy';
/** The init container that sets up traffic capture. */
export const INIT_CONTAINER = 'istio-init';
/** The init container that validates the CNI plugin's capture. */
export const VALIDATION_CONTAINER = 'istio-validation';

// Labels.

/** Label (and deprecated pod annotation) that turns sidecar injection on or off for a pod. */
export const SIDECAR_INJECT = 'sidecar.istio.io/inject';
/** Namespace label: `enabled` / `disabled` sidecar injection. */
export const NAMESPACE_INJECTION_LABEL = 'istio-injection';
/** The control-plane revision (or tag) a namespace, pod or webhook belongs to. */
export const REVISION_LABEL = 'istio.io/rev';
/** Namespace/pod label choosing the data plane (`ambient`, `none`). */
export const DATAPLANE_MODE_LABEL = 'istio.io/dataplane-mode';
/** Namespace/service/workload label naming the waypoint (a Gateway of the namespace) its traffic goes through. */
export const USE_WAYPOINT_LABEL = 'istio.io/use-waypoint';
/** Waypoint Gateway label: which traffic it takes (`service`, `workload`, `all`, `none`). */
export const WAYPOINT_FOR_LABEL = 'istio.io/waypoint-for';
/** The GatewayClass of waypoints. */
export const WAYPOINT_GATEWAY_CLASS = 'istio-waypoint';
/** Endpoint label: `istio` when the workload's sidecar takes Istio mTLS. */
export const TLS_MODE_LABEL = 'security.istio.io/tlsMode';
/** The network a workload is on. */
export const NETWORK_LABEL = 'topology.istio.io/network';
/** The cluster a workload is in. */
export const CLUSTER_LABEL = 'topology.istio.io/cluster';
/** The locality subzone of a workload. */
export const SUBZONE_LABEL = 'topology.istio.io/subzone';
/** Kubernetes: the region of a node (and of the workloads on it). */
export const REGION_LABEL = 'topology.kubernetes.io/region';
/** Kubernetes: the zone of a node (and of the workloads on it). */
export const ZONE_LABEL = 'topology.kubernetes.io/zone';
/** The canonical service name of a workload (telemetry). */
export const CANONICAL_NAME_LABEL = 'service.istio.io/canonical-name';
/** The canonical service revision of a workload (telemetry). */
export const CANONICAL_REVISION_LABEL = 'service.istio.io/canonical-revision';
/** Kubernetes: the label every namespace carries with its own name. */
export const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

// Annotations.

/** The injector's record of what it injected. */
export const SIDECAR_STATUS_ANNOTATION = 'sidecar.istio.io/status';
/** The traffic interception mode of a pod (`REDIRECT`, `TPROXY`, `NONE`). */
export const INTERCEPTION_MODE_ANNOTATION = 'sidecar.istio.io/interceptionMode';
/** The port of the sidecar's status server. */
export const STATUS_PORT_ANNOTATION = 'status.sidecar.istio.io/port';
/** Per-pod ProxyConfig overrides. */
export const PROXY_CONFIG_ANNOTATION = 'proxy.istio.io/config';
/** A Service's exportTo. */
export const EXPORT_TO_ANNOTATION = 'networking.istio.io/exportTo';
/** A NodePort network gateway Service's nodes (JSON labels): it is reached at their external IPs. */
export const NODE_SELECTOR_ANNOTATION = 'traffic.istio.io/nodeSelector';
/** kubectl's default container of a pod. */
export const DEFAULT_CONTAINER_ANNOTATION = 'kubectl.kubernetes.io/default-container';
/** An AuthorizationPolicy with this annotation set to true is evaluated (shadow rules) but not enforced. */
export const DRY_RUN_ANNOTATION = 'istio.io/dry-run';

// Gateway API.

/** The Gateway API group. */
export const GATEWAY_API_GROUP = 'gateway.networking.k8s.io';
/** Label of the pods of a deployed Gateway API gateway: the Gateway's name. */
export const GATEWAY_NAME_LABEL = 'gateway.networking.k8s.io/gateway-name';

// Proxy process.

/** The default service cluster of a proxy (ProxyConfig `serviceCluster`). */
export const DEFAULT_SERVICE_CLUSTER = 'istio-proxy';
/** The user the proxy runs as (its uid is exempt from capture). */
export const PROXY_USER = 'istio-proxy';

// WorkloadEntry auto-registration and health (istiod: pilot/pkg/autoregistration, pilot/pkg/model/status).

/** On an auto-registered WorkloadEntry: the WorkloadGroup it was made from. */
export const AUTO_REGISTRATION_GROUP_ANNOTATION = 'istio.io/autoRegistrationGroup';
/** The control-plane instance the entry's proxy is connected to (the only one that may change or remove it). */
export const WORKLOAD_CONTROLLER_ANNOTATION = 'istio.io/workloadController';
/** When the proxy connected (RFC 3339 with nanoseconds, as Go's time.RFC3339Nano). */
export const CONNECTED_AT_ANNOTATION = 'istio.io/connectedAt';
/** When the last connection of the proxy ended; the entry is removed a grace period later. */
export const DISCONNECTED_AT_ANNOTATION = 'istio.io/disconnectedAt';
/** `true`: the entry's endpoints are served only while its `Healthy` condition is True. */
export const HEALTH_CHECKS_ENABLED_ANNOTATION = 'proxy.istio.io/health-checks-enabled';
/** The condition type the health reports set. */
export const HEALTHY_CONDITION = 'Healthy';
