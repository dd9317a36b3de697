/** Public surface of src/security: the CA, the CSR service on the secure gRPC server, authenticators. */
export { IstioCa, type KeyCert } from './ca/istio-ca.js';
export { type KeyType } from './crypto.js';
export { authenticate, type Authenticator, type Caller } from './authn/authenticator.js';
export { parseJwtRule, type JwtRule } from './authn/jwt-rule.js';
export { parseTrustedNodeAccounts, type TrustedNodeAccount } from './authn/impersonation.js';
export { authorizeProxy, isLoopbackAddress, streamOriginOf } from './authn/proxy-authorization.js';
export { DEFAULT_CSR_LIMITS } from './csr/csr-limits.js';
export { ISTIOD_TLS } from './tls-defaults.js';
export { startSecureGrpc, type RunningSecureGrpc, type SecureService } from './secure-grpc.js';
export { CA_KEY_FILE } from './ca/files.js';
export { IMPERSONATED_IDENTITY, type PlacementCheck } from './authn/impersonation.js';
export { nodePlacement, type PlacedPod, type PodPlacements } from './authn/node-placement.js';
