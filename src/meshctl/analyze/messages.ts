/**
 * The part of Istio's message catalogue (pkg/config/analysis/msg/messages.yaml) meshctl emits:
 * same names, codes, levels and templates, so scripts keyed on `IST0xxx` carry over.
 */
export type Level = 'Info' | 'Warning' | 'Error';

export const LEVELS: readonly Level[] = ['Info', 'Warning', 'Error'];

export const levelRank = (l: Level): number => LEVELS.indexOf(l);

export function parseLevel(s: string): Level | undefined {
  return LEVELS.find((l) => l.toLowerCase() === s.toLowerCase());
}

export interface MessageType {
  readonly name: string;
  readonly code: string;
  readonly level: Level;
  /** Go fmt template: %s %v %d insert the argument, %q quotes it. */
  readonly template: string;
}

const t = (name: string, code: string, level: Level, template: string): MessageType => ({ name, code, level, template });

export const MSG = {
  ReferencedResourceNotFound: t('ReferencedResourceNotFound', 'IST0101', 'Error', 'Referenced %s not found: %q'),
  SchemaValidationError: t('SchemaValidationError', 'IST0106', 'Error', 'Schema validation error: %v'),
  SchemaWarning: t('SchemaWarning', 'IST0133', 'Warning', 'Schema validation warning: %v'),
  MultiClusterInconsistentService: t(
    'MultiClusterInconsistentService',
    'IST0170',
    'Warning',
    'The service %v in namespace %q is inconsistent across clusters %q, which can lead to undefined behaviors. The inconsistent behaviors are: %v.',
  ),
  ConflictingMeshGatewayVirtualServiceHosts: t(
    'ConflictingMeshGatewayVirtualServiceHosts',
    'IST0109',
    'Error',
    'The VirtualServices %s associated with mesh gateway define the same host %s which can lead to undefined behavior. This can be fixed by merging the conflicting VirtualServices into a single resource.',
  ),
  ConflictingSidecarWorkloadSelectors: t(
    'ConflictingSidecarWorkloadSelectors',
    'IST0110',
    'Error',
    'The Sidecars %v in namespace %q select the same workload pod %q, which can lead to undefined behavior.',
  ),
  MultipleSidecarsWithoutWorkloadSelectors: t(
    'MultipleSidecarsWithoutWorkloadSelectors',
    'IST0111',
    'Error',
    'The Sidecars %v in namespace %q have no workload selector, which can lead to undefined behavior.',
  ),
  VirtualServiceDestinationPortSelectorRequired: t(
    'VirtualServiceDestinationPortSelectorRequired',
    'IST0112',
    'Error',
    'This VirtualService routes to a service %q that exposes multiple ports %v. Specifying a port in the destination is required to disambiguate.',
  ),
  NamespaceNotInjected: t(
    'NamespaceNotInjected',
    'IST0102',
    'Info',
    "The namespace is not enabled for Istio injection. Run 'kubectl label namespace %s istio-injection=enabled' to enable it, or 'kubectl label namespace %s istio-injection=disabled' to explicitly mark it as not needing injection.",
  ),
  PodMissingProxy: t(
    'PodMissingProxy',
    'IST0103',
    'Warning',
    'The pod %s is missing the Istio proxy. This can often be resolved by restarting or redeploying the workload.',
  ),
  NamespaceMultipleInjectionLabels: t(
    'NamespaceMultipleInjectionLabels',
    'IST0123',
    'Warning',
    'The namespace has more than one type of injection labels %v, which may lead to undefined behavior. Make sure only one injection label exists.',
  ),
  PortNameIsNotUnderNamingConvention: t(
    'PortNameIsNotUnderNamingConvention',
    'IST0118',
    'Info',
    "Port name %s (port: %d, targetPort: %s) doesn't follow the naming convention of Istio port.",
  ),
  ExternalNameServiceTypeInvalidPortName: t(
    'ExternalNameServiceTypeInvalidPortName',
    'IST0150',
    'Warning',
    'Port name for ExternalName service is invalid. Proxy may prevent tcp named ports and unmatched traffic for ports serving TCP protocol from being forwarded correctly',
  ),
  NoServerCertificateVerificationDestinationLevel: t(
    'NoServerCertificateVerificationDestinationLevel',
    'IST0128',
    'Warning',
    'DestinationRule %s in namespace %s has TLS mode set to %s but no caCertificates are set to validate server identity for host: %s',
  ),
  NoServerCertificateVerificationPortLevel: t(
    'NoServerCertificateVerificationPortLevel',
    'IST0129',
    'Warning',
    'DestinationRule %s in namespace %s has TLS mode set to %s but no caCertificates are set to validate server identity for host: %s at port %s',
  ),
  VirtualServiceUnreachableRule: t('VirtualServiceUnreachableRule', 'IST0130', 'Warning', 'VirtualService rule %v not used (%s).'),
  VirtualServiceIneffectiveMatch: t(
    'VirtualServiceIneffectiveMatch',
    'IST0131',
    'Info',
    'VirtualService rule %v match %v is not used (duplicate/overlapping match in rule %v).',
  ),
  VirtualServiceHostNotFoundInGateway: t(
    'VirtualServiceHostNotFoundInGateway',
    'IST0132',
    'Warning',
    'one or more host %v defined in VirtualService %s not found in Gateway %s.',
  ),
  ServiceEntryAddressesRequired: t(
    'ServiceEntryAddressesRequired',
    'IST0134',
    'Warning',
    'ServiceEntry addresses are required for this protocol.',
  ),
  GatewayDuplicateCertificate: t(
    'GatewayDuplicateCertificate',
    'IST0138',
    'Warning',
    'Duplicate certificate in multiple gateways %v may cause 404s if clients re-use HTTP2 connections.',
  ),
  ConflictingGateways: t('ConflictingGateways', 'IST0145', 'Error', 'Conflict with gateways %s (workload selector %s, port %s, hosts %v).'),
  JwtClaimBasedRoutingWithoutRequestAuthN: t(
    'JwtClaimBasedRoutingWithoutRequestAuthN',
    'IST0149',
    'Error',
    'The virtual service uses the JWT claim based routing (key: %s) but found no request authentication for the gateway (%s) pod (%s). The request authentication must first be applied for the gateway pods to validate the JWT token and make the claims available for routing.',
  ),
  DestinationRuleSubsetNotSelectPods: t(
    'DestinationRuleSubsetNotSelectPods',
    'IST0173',
    'Error',
    'The Subset %s defined in the DestinationRule does not select any pods. Which may lead to 503 UH (NoHealthyUpstream).',
  ),
  UnknownDestinationRuleHost: t(
    'UnknownDestinationRuleHost',
    'IST0174',
    'Warning',
    'The host %s defined in the DestinationRule does not match any services in the mesh.',
  ),
  MisplacedAnnotation: t('MisplacedAnnotation', 'IST0107', 'Warning', 'Misplaced annotation: %s can only be applied to %s'),
  UnknownAnnotation: t('UnknownAnnotation', 'IST0108', 'Warning', 'Unknown annotation: %s'),
  DeploymentAssociatedToMultipleServices: t(
    'DeploymentAssociatedToMultipleServices',
    'IST0116',
    'Warning',
    'This deployment %s is associated with multiple services using port %d but different protocols: %v',
  ),
  DeprecatedAnnotation: t(
    'DeprecatedAnnotation',
    'IST0135',
    'Info',
    'Annotation %q has been deprecated%s and may not work in future Istio versions.',
  ),
  DeploymentConflictingPorts: t(
    'DeploymentConflictingPorts',
    'IST0137',
    'Warning',
    'This deployment %s is associated with multiple services %v using targetPort %q but different ports: %v.',
  ),
  IngressRouteRulesNotAffected: t(
    'IngressRouteRulesNotAffected',
    'IST0140',
    'Warning',
    'Subset in virtual service %s has no effect on ingress gateway %s requests',
  ),
  EnvoyFilterUsesRelativeOperation: t(
    'EnvoyFilterUsesRelativeOperation',
    'IST0151',
    'Warning',
    'This EnvoyFilter does not have a priority and has a relative patch operation set which can cause the EnvoyFilter not to be applied. Using the INSERT_FIRST of ADD option or setting the priority may help in ensuring the EnvoyFilter is applied correctly.',
  ),
  EnvoyFilterUsesReplaceOperationIncorrectly: t(
    'EnvoyFilterUsesReplaceOperationIncorrectly',
    'IST0152',
    'Error',
    'The REPLACE operation is only valid for HTTP_FILTER and NETWORK_FILTER.',
  ),
  EnvoyFilterUsesAddOperationIncorrectly: t(
    'EnvoyFilterUsesAddOperationIncorrectly',
    'IST0153',
    'Error',
    'The ADD operation will be ignored when applyTo is set to ROUTE_CONFIGURATION, or HTTP_ROUTE.',
  ),
  EnvoyFilterUsesRemoveOperationIncorrectly: t(
    'EnvoyFilterUsesRemoveOperationIncorrectly',
    'IST0154',
    'Error',
    'The REMOVE operation will be ignored when applyTo is set to ROUTE_CONFIGURATION, or HTTP_ROUTE.',
  ),
  EnvoyFilterUsesRelativeOperationWithProxyVersion: t(
    'EnvoyFilterUsesRelativeOperationWithProxyVersion',
    'IST0155',
    'Warning',
    'This EnvoyFilter does not have a priority and has a relative patch operation (NSTERT_BEFORE/AFTER, REPLACE, MERGE, DELETE) and proxyVersion set which can cause the EnvoyFilter not to be applied during an upgrade. Using the INSERT_FIRST or ADD option or setting the priority may help in ensuring the EnvoyFilter is applied correctly.',
  ),
  MultipleTelemetriesWithoutWorkloadSelectors: t(
    'MultipleTelemetriesWithoutWorkloadSelectors',
    'IST0160',
    'Error',
    'The Telemetries %v in namespace %q have no workload selector, which can lead to undefined behavior.',
  ),
  InvalidGatewayCredential: t(
    'InvalidGatewayCredential',
    'IST0161',
    'Error',
    'The credential referenced by the Gateway %s in namespace %s is invalid, which can cause the traffic not to work as expected.',
  ),
  GatewayPortNotDefinedOnService: t(
    'GatewayPortNotDefinedOnService',
    'IST0162',
    'Warning',
    'The gateway is listening on a target port (port %d) that is not defined in the Service associated with its workload instances (Pod selector %s). If you need to access the gateway port through the gateway Service, it will not be available.',
  ),
  IneffectiveSelector: t(
    'IneffectiveSelector',
    'IST0166',
    'Warning',
    'Ineffective selector on Kubernetes Gateway %s. Use the TargetRef field instead.',
  ),
  IneffectivePolicy: t('IneffectivePolicy', 'IST0167', 'Warning', 'The policy has no impact: %s.'),
  ConflictingServiceEntryProtocol: t(
    'ConflictingServiceEntryProtocol',
    'IST0177',
    'Warning',
    'Multiple ServiceEntries (%s) define the same host %q and port %d with conflicting protocols (%s).',
  ),
  Deprecated: t('Deprecated', 'IST0002', 'Warning', 'Deprecated: %s'),
  InvalidAnnotation: t('InvalidAnnotation', 'IST0125', 'Warning', 'Invalid annotation %s: %s'),
  UnknownMeshNetworksServiceRegistry: t(
    'UnknownMeshNetworksServiceRegistry',
    'IST0126',
    'Error',
    'Unknown service registry %s in network %s',
  ),
  NoMatchingWorkloadsFound: t(
    'NoMatchingWorkloadsFound',
    'IST0127',
    'Warning',
    'No matching workloads for this resource with the following labels: %s',
  ),
  InvalidWebhook: t('InvalidWebhook', 'IST0139', 'Error', '%v'),
  InvalidApplicationUID: t('InvalidApplicationUID', 'IST0144', 'Warning', 'User ID (UID) 1337 is reserved for the sidecar proxy.'),
  ImageAutoWithoutInjectionWarning: t(
    'ImageAutoWithoutInjectionWarning',
    'IST0146',
    'Warning',
    '%s %s contains `image: auto` but does not match any Istio injection webhook selectors.',
  ),
  ImageAutoWithoutInjectionError: t(
    'ImageAutoWithoutInjectionError',
    'IST0147',
    'Error',
    '%s %s contains `image: auto` but does not match any Istio injection webhook selectors.',
  ),
  NamespaceInjectionEnabledByDefault: t(
    'NamespaceInjectionEnabledByDefault',
    'IST0148',
    'Info',
    'is enabled for Istio injection, as Istio is installed with enableNamespacesByDefault as true.',
  ),
  InvalidTelemetryProvider: t(
    'InvalidTelemetryProvider',
    'IST0157',
    'Warning',
    'The Telemetry %v in namespace %q with empty providers will be ignored.',
  ),
  PodsIstioProxyImageMismatchInNamespace: t(
    'PodsIstioProxyImageMismatchInNamespace',
    'IST0158',
    'Warning',
    'The Istio proxy images of the pods running in the namespace do not match the image defined in the injection configuration (pod names: %v). This often happens after upgrading the Istio control-plane and can be fixed by redeploying the pods.',
  ),
  ConflictingTelemetryWorkloadSelectors: t(
    'ConflictingTelemetryWorkloadSelectors',
    'IST0159',
    'Error',
    'The Telemetries %v in namespace %q select the same workload pod %q, which can lead to undefined behavior.',
  ),
  InvalidExternalControlPlaneConfig: t(
    'InvalidExternalControlPlaneConfig',
    'IST0163',
    'Warning',
    'The hostname (%s) that was provided for the webhook (%s) to reach the ingress gateway on the external control plane cluster %s. Traffic may not flow properly.',
  ),
  ExternalControlPlaneAddressIsNotAHostname: t(
    'ExternalControlPlaneAddressIsNotAHostname',
    'IST0164',
    'Info',
    'The address (%s) that was provided for the webhook (%s) to reach the ingress gateway on the external control plane cluster is an IP address. This is not recommended for a production environment.',
  ),
  ReferencedInternalGateway: t(
    'ReferencedInternalGateway',
    'IST0165',
    'Warning',
    'Gateway reference in VirtualService %s is to an implementation-generated internal Gateway: %s.',
  ),
  NegativeConditionStatus: t(
    'NegativeConditionStatus',
    'IST0171',
    'Warning',
    'A condition with a negative status is present: type=%s, reason=%s, message=%s.',
  ),
  JwksUriFetchUnrestricted: t(
    'JwksUriFetchUnrestricted',
    'IST0175',
    'Warning',
    'BLOCKED_CIDRS_IN_JWKS_URIS is not configured but %d RequestAuthentication resource(s) exist (%s). Consider configuring it to restrict JWKS URI fetches to trusted networks.',
  ),
  GatewayAPICRDVersionBelowMinimum: t(
    'GatewayAPICRDVersionBelowMinimum',
    'IST0176',
    'Warning',
    'Gateway API CRD %q is at version %q but Istio requires at least %q; resources of this kind will not be processed. Upgrade the Gateway API CRDs to satisfy the minimum version.',
  ),
  // meshpilot's own (not in istioctl's catalogue): a Gateway API status condition istiod would write as failed.
  GatewayAPIConditionFailed: t('GatewayAPIConditionFailed', 'IST0900', 'Warning', '%s condition %s is %s: %s (%s)'),
} as const satisfies Record<string, MessageType>;

/** Go's %v of a slice: `[a b c]`. Analyzers pass arrays for `[]string`/`[]int` arguments. */
function goValue(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(goValue).join(' ')}]`;
  return String(v);
}

/** Go's %q: a string double-quoted with JSON-style escapes (the same for printable text); a slice as `["a" "b"]`. */
const goQuote = (v: unknown): string => (Array.isArray(v) ? `[${v.map(goQuote).join(' ')}]` : JSON.stringify(String(v)));

/** Renders a Go fmt template with the verbs the catalogue uses. */
export function render(template: string, args: readonly unknown[]): string {
  let i = 0;
  return template.replace(/%([svdtq%])/g, (_m, verb: string) => {
    if (verb === '%') return '%';
    const a = args[i++];
    return verb === 'q' ? goQuote(a) : goValue(a);
  });
}
