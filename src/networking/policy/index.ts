export {
  buildHttpRbacFilters,
  buildNetworkRbacFilters,
  rbacPolicyName,
  DRY_RUN_ANNOTATION,
  HTTP_RBAC_FILTER,
  NETWORK_RBAC_FILTER,
  NETWORK_RBAC_STAT_PREFIX,
  type AuthzOptions,
  type AuthzPolicies,
  type SkippedRule,
} from './authz-filters.js';
export { buildJwtAuthnFilter, JWT_AUTHN_FILTER, JWT_PAYLOAD_METADATA_KEY, type JwtAuthnOptions } from './jwt-authn.js';
export {
  inboundChainVariants,
  inboundTlsContext,
  INBOUND_CIPHER_SUITES,
  type ChainVariant,
  type InboundProtocol,
  type InboundTlsOptions,
  type MtlsMode,
} from './inbound-tls.js';
export { readUriTemplateAny, URI_TEMPLATE_TYPE_URL } from './uri-template.js';
