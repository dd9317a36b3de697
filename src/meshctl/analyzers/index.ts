/** Every analyzer `meshctl analyze` runs, in istioctl's listing order. */
import type { Analyzer } from '../analyze/model.js';
import { annotationsAnalyzer } from './annotations.js';
import { applicationUidAnalyzer } from './application-uid.js';
import { authorizationPoliciesAnalyzer } from './authorization-policies.js';
import { blockedCidrsAnalyzer } from './blocked-cidrs.js';
import { crdVersionAnalyzer } from './crd-version.js';
import { externalControlPlaneAnalyzer } from './external-control-plane.js';
import { webhookAnalyzer } from './webhook.js';
import { caCertificatesAnalyzer } from './ca-certificates.js';
import { conditionsAnalyzer } from './conditions.js';
import { conflictingGatewaysAnalyzer } from './conflicting-gateways.js';
import { conflictingMeshGatewayHostsAnalyzer } from './conflicting-mesh-gateway-hosts.js';
import { conflictingServiceEntryProtocolAnalyzer } from './conflicting-service-entry-protocol.js';
import { deprecationAnalyzer } from './deprecation.js';
import { deploymentServicesAnalyzer } from './deployment-services.js';
import { destinationHostAnalyzer } from './destination-host.js';
import { destinationRuleReferenceAnalyzer } from './destination-rule-reference.js';
import { destinationRuleSubsetPodsAnalyzer } from './destination-rule-subset-pods.js';
import { envoyFilterAnalyzer } from './envoy-filter.js';
import { gatewayDuplicateCertificateAnalyzer } from './gateway-duplicate-certificate.js';
import { gatewayApiStatusAnalyzer } from './gateway-api-status.js';
import { gatewayPortsAnalyzer } from './gateway-ports.js';
import { gatewayReferenceAnalyzer } from './gateway-reference.js';
import { gatewaySecretAnalyzer } from './gateway-secret.js';
import { imageAutoAnalyzer } from './image-auto.js';
import { injectionAnalyzer } from './injection.js';
import { injectionImageAnalyzer } from './injection-image.js';
import { jwtClaimRouteAnalyzer } from './jwt-claim-route.js';
import { k8sGatewaySelectorAnalyzer } from './k8s-gateway-selector.js';
import { portNameAnalyzer } from './port-name.js';
import { schemaValidationAnalyzer } from './schema-validation.js';
import { serviceEntryAddressesAnalyzer } from './service-entry-addresses.js';
import { sidecarDefaultSelectorAnalyzer } from './sidecar-default-selector.js';
import { sidecarSelectorAnalyzer } from './sidecar-selector.js';
import { telemetryDefaultSelectorAnalyzer } from './telemetry-default-selector.js';
import { telemetryLightstepAnalyzer, telemetryProviderAnalyzer } from './telemetry-providers.js';
import { telemetrySelectorAnalyzer } from './telemetry-selector.js';
import { meshNetworksAnalyzer } from './mesh-networks.js';
import { multiClusterServicesAnalyzer } from './multicluster-services.js';
import { unreachableRoutesAnalyzer } from './unreachable-routes.js';

export const ALL_ANALYZERS: readonly Analyzer[] = [
  annotationsAnalyzer,
  blockedCidrsAnalyzer,
  authorizationPoliciesAnalyzer,
  conditionsAnalyzer,
  deploymentServicesAnalyzer,
  applicationUidAnalyzer,
  caCertificatesAnalyzer,
  destinationRuleSubsetPodsAnalyzer,
  deprecationAnalyzer,
  envoyFilterAnalyzer,
  externalControlPlaneAnalyzer,
  gatewayPortsAnalyzer,
  gatewayDuplicateCertificateAnalyzer,
  gatewaySecretAnalyzer,
  conflictingGatewaysAnalyzer,
  injectionAnalyzer,
  injectionImageAnalyzer,
  imageAutoAnalyzer,
  k8sGatewaySelectorAnalyzer,
  crdVersionAnalyzer,
  // meshpilot's own: Gateway API status as istiod would write it.
  gatewayApiStatusAnalyzer,
  meshNetworksAnalyzer,
  multiClusterServicesAnalyzer,
  portNameAnalyzer,
  sidecarDefaultSelectorAnalyzer,
  sidecarSelectorAnalyzer,
  conflictingMeshGatewayHostsAnalyzer,
  destinationHostAnalyzer,
  destinationRuleReferenceAnalyzer,
  gatewayReferenceAnalyzer,
  jwtClaimRouteAnalyzer,
  serviceEntryAddressesAnalyzer,
  conflictingServiceEntryProtocolAnalyzer,
  webhookAnalyzer,
  telemetryProviderAnalyzer,
  telemetrySelectorAnalyzer,
  telemetryDefaultSelectorAnalyzer,
  telemetryLightstepAnalyzer,
  // Istio's schema.AllValidationAnalyzers come last (IST0106; IST0130/0131 from VirtualService validation).
  schemaValidationAnalyzer,
  unreachableRoutesAnalyzer,
];
