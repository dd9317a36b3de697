/** Every analyzer `meshctl analyze` runs, in istioctl's listing order. */
import type { Analyzer } from '../analyze/model.js';
import { caCertificatesAnalyzer } from './ca-certificates.js';
import { conflictingGatewaysAnalyzer } from './conflicting-gateways.js';
import { conflictingMeshGatewayHostsAnalyzer } from './conflicting-mesh-gateway-hosts.js';
import { destinationHostAnalyzer } from './destination-host.js';
import { destinationRuleReferenceAnalyzer } from './destination-rule-reference.js';
import { destinationRuleSubsetPodsAnalyzer } from './destination-rule-subset-pods.js';
import { gatewayDuplicateCertificateAnalyzer } from './gateway-duplicate-certificate.js';
import { gatewayReferenceAnalyzer } from './gateway-reference.js';
import { injectionAnalyzer } from './injection.js';
import { jwtClaimRouteAnalyzer } from './jwt-claim-route.js';
import { portNameAnalyzer } from './port-name.js';
import { schemaValidationAnalyzer } from './schema-validation.js';
import { serviceEntryAddressesAnalyzer } from './service-entry-addresses.js';
import { sidecarDefaultSelectorAnalyzer } from './sidecar-default-selector.js';
import { sidecarSelectorAnalyzer } from './sidecar-selector.js';
import { unreachableRoutesAnalyzer } from './unreachable-routes.js';

export const ALL_ANALYZERS: readonly Analyzer[] = [
  caCertificatesAnalyzer,
  destinationRuleSubsetPodsAnalyzer,
  gatewayDuplicateCertificateAnalyzer,
  conflictingGatewaysAnalyzer,
  injectionAnalyzer,
  schemaValidationAnalyzer,
  portNameAnalyzer,
  serviceEntryAddressesAnalyzer,
  sidecarDefaultSelectorAnalyzer,
  sidecarSelectorAnalyzer,
  conflictingMeshGatewayHostsAnalyzer,
  destinationHostAnalyzer,
  destinationRuleReferenceAnalyzer,
  gatewayReferenceAnalyzer,
  jwtClaimRouteAnalyzer,
  unreachableRoutesAnalyzer,
];
