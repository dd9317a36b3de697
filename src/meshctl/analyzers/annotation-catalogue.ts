/**
 * Istio's annotation catalogue: every annotation istio/api defines (annotation/annotations.yaml),
 * whether it is deprecated, and the resource types it may be applied to, in the catalogue's order.
 * Generated from the file named in SOURCE.md beside this one; facts only, regenerate rather than
 * edit by hand.
 */

/** istio/api's annotation.ResourceTypes names (`Any`: every resource). */
export type AnnotationResource =
  | 'Any'
  | 'AuthorizationPolicy'
  | 'Gateway'
  | 'GatewayClass'
  | 'Ingress'
  | 'Namespace'
  | 'Pod'
  | 'Service'
  | 'ServiceEntry'
  | 'WorkloadEntry';

export interface AnnotationInfo {
  readonly deprecated: boolean;
  readonly resources: readonly AnnotationResource[];
}

export const ISTIO_ANNOTATIONS: ReadonlyMap<string, AnnotationInfo> = new Map<string, AnnotationInfo>([
  ['prometheus.istio.io/merge-metrics', { deprecated: false, resources: ['Pod'] }],
  ['alpha.istio.io/kubernetes-serviceaccounts', { deprecated: true, resources: ['Service'] }],
  ['alpha.istio.io/canonical-serviceaccounts', { deprecated: true, resources: ['Service'] }],
  ['networking.istio.io/exportTo', { deprecated: false, resources: ['Service'] }],
  ['sidecar.istio.io/inject', { deprecated: true, resources: ['Pod'] }],
  ['sidecar.istio.io/status', { deprecated: false, resources: ['Pod'] }],
  ['sidecar.istio.io/rewriteAppHTTPProbers', { deprecated: false, resources: ['Pod'] }],
  ['sidecar.istio.io/discoveryAddress', { deprecated: true, resources: ['Pod'] }],
  ['sidecar.istio.io/proxyImage', { deprecated: false, resources: ['Pod'] }],
  ['sidecar.istio.io/proxyImageType', { deprecated: false, resources: ['Pod'] }],
  ['sidecar.istio.io/proxyCPU', { deprecated: false, resources: ['Pod'] }],
  ['sidecar.istio.io/proxyCPULimit', { deprecated: false, resources: ['Pod'] }],
  ['sidecar.istio.io/proxyMemory', { deprecated: false, resources: ['Pod'] }],
  ['sidecar.istio.io/proxyMemoryLimit', { deprecated: false, resources: ['Pod'] }],
  ['sidecar.istio.io/interceptionMode', { deprecated: false, resources: ['Pod'] }],
  ['sidecar.istio.io/bootstrapOverride', { deprecated: false, resources: ['Pod'] }],
  ['sidecar.istio.io/statsInclusionPrefixes', { deprecated: true, resources: ['Pod'] }],
  ['sidecar.istio.io/statsInclusionSuffixes', { deprecated: true, resources: ['Pod'] }],
  ['sidecar.istio.io/statsInclusionRegexps', { deprecated: true, resources: ['Pod'] }],
  ['sidecar.istio.io/statsHistogramBuckets', { deprecated: false, resources: ['Pod'] }],
  ['sidecar.istio.io/statsFlushInterval', { deprecated: false, resources: ['Pod'] }],
  ['sidecar.istio.io/statsEvictionInterval', { deprecated: false, resources: ['Pod'] }],
  ['sidecar.istio.io/statsHistogramBins', { deprecated: false, resources: ['Pod'] }],
  ['sidecar.istio.io/userVolume', { deprecated: false, resources: ['Pod'] }],
  ['sidecar.istio.io/userVolumeMount', { deprecated: false, resources: ['Pod'] }],
  ['status.sidecar.istio.io/port', { deprecated: false, resources: ['Pod'] }],
  ['sidecar.istio.io/logLevel', { deprecated: false, resources: ['Pod'] }],
  ['sidecar.istio.io/componentLogLevel', { deprecated: false, resources: ['Pod'] }],
  ['sidecar.istio.io/agentLogLevel', { deprecated: false, resources: ['Pod'] }],
  ['sidecar.istio.io/nativeSidecar', { deprecated: false, resources: ['Pod'] }],
  ['readiness.status.sidecar.istio.io/initialDelaySeconds', { deprecated: false, resources: ['Pod'] }],
  ['readiness.status.sidecar.istio.io/periodSeconds', { deprecated: false, resources: ['Pod'] }],
  ['readiness.status.sidecar.istio.io/failureThreshold', { deprecated: false, resources: ['Pod'] }],
  ['readiness.status.sidecar.istio.io/applicationPorts', { deprecated: false, resources: ['Pod'] }],
  ['traffic.istio.io/nodeSelector', { deprecated: false, resources: ['Service'] }],
  ['traffic.sidecar.istio.io/includeOutboundIPRanges', { deprecated: false, resources: ['Pod'] }],
  ['traffic.sidecar.istio.io/excludeOutboundIPRanges', { deprecated: false, resources: ['Pod'] }],
  ['traffic.sidecar.istio.io/includeInboundPorts', { deprecated: false, resources: ['Pod'] }],
  ['traffic.sidecar.istio.io/excludeInboundPorts', { deprecated: false, resources: ['Pod'] }],
  ['traffic.sidecar.istio.io/excludeInterfaces', { deprecated: false, resources: ['Pod'] }],
  ['traffic.sidecar.istio.io/includeOutboundPorts', { deprecated: false, resources: ['Pod'] }],
  ['traffic.sidecar.istio.io/excludeOutboundPorts', { deprecated: false, resources: ['Pod'] }],
  ['traffic.sidecar.istio.io/kubevirtInterfaces', { deprecated: true, resources: ['Pod'] }],
  ['kubernetes.io/ingress.class', { deprecated: false, resources: ['Ingress'] }],
  ['galley.istio.io/analyze-suppress', { deprecated: false, resources: ['Any'] }],
  ['proxy.istio.io/config', { deprecated: false, resources: ['Pod'] }],
  ['istio.io/dry-run', { deprecated: false, resources: ['AuthorizationPolicy'] }],
  ['istio.io/rev', { deprecated: false, resources: ['Pod'] }],
  ['proxy.istio.io/overrides', { deprecated: false, resources: ['Pod'] }],
  ['inject.istio.io/templates', { deprecated: false, resources: ['Pod'] }],
  ['sidecar.istio.io/extraStatTags', { deprecated: true, resources: ['Pod'] }],
  ['istio.io/autoRegistrationGroup', { deprecated: false, resources: ['WorkloadEntry'] }],
  ['istio.io/workloadController', { deprecated: false, resources: ['WorkloadEntry'] }],
  ['istio.io/connectedAt', { deprecated: false, resources: ['WorkloadEntry'] }],
  ['istio.io/disconnectedAt', { deprecated: false, resources: ['WorkloadEntry'] }],
  ['topology.istio.io/controlPlaneClusters', { deprecated: false, resources: ['Namespace'] }],
  ['gateway.istio.io/controller-version', { deprecated: false, resources: ['Any'] }],
  ['ambient.istio.io/redirection', { deprecated: false, resources: ['Pod'] }],
  ['ambient.istio.io/waypoint-inbound-binding', { deprecated: false, resources: ['GatewayClass', 'Gateway'] }],
  ['gateway.istio.io/service-account', { deprecated: false, resources: ['Gateway'] }],
  ['gateway.istio.io/name-override', { deprecated: false, resources: ['Gateway'] }],
  ['networking.istio.io/service-type', { deprecated: false, resources: ['Gateway'] }],
  ['networking.istio.io/traffic-distribution', { deprecated: false, resources: ['Namespace', 'Service', 'ServiceEntry'] }],
  ['istio.io/use-waypoint-canary-weight', { deprecated: false, resources: ['Service', 'ServiceEntry', 'Namespace'] }],
  ['ambient.istio.io/bypass-inbound-capture', { deprecated: false, resources: ['Pod'] }],
  ['istio.io/reroute-virtual-interfaces', { deprecated: false, resources: ['Pod'] }],
  ['ambient.istio.io/dns-capture', { deprecated: false, resources: ['Pod'] }],
  ['sidecar.istio.io/statsCompression', { deprecated: true, resources: ['Pod'] }],
]);
