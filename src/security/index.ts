/** Public surface of src/security: the CA, the CSR service on the secure gRPC server, authenticators. */
export {
  IstioCa,
  DEFAULT_MAX_WORKLOAD_CERT_TTL_MS,
  DEFAULT_ROOT_CERT_TTL_MS,
  DEFAULT_WORKLOAD_CERT_TTL_MS,
  type CaOptions,
  type KeyCert,
  type SignOptions,
} from './ca/istio-ca.js';
export { CaError, type CaErrorType } from './ca/errors.js';
export { CLOCK_SKEW_GRACE_MS, createSelfSignedRoot, issueLeaf, sanUris, type SigningCert } from './ca/certificates.js';
export { parseCsr, weakKeyReason } from './ca/csr.js';
export type { CaSource } from './ca/key-cert-bundle.js';
export {
  exportPrivateKeyPem,
  generateKeyPair,
  importPrivateKeyPem,
  parseCertificates,
  publicKeyInfo,
  signingAlgorithm,
  splitPemCertificates,
  x509,
  type KeyPair,
  type KeyType,
} from './crypto.js';
export { parseSpiffeId, spiffeId, type SpiffeIdentity } from './spiffe.js';
export { authenticate, bearerToken, type AuthContext, type AuthOutcome, type Authenticator, type Caller } from './authn/authenticator.js';
export { clientCertAuthenticator } from './authn/client-cert.js';
export { jwtAuthenticator } from './authn/jwt-authenticator.js';
export { parseJwtRule, type JwtRule } from './authn/jwt-rule.js';
export { kubeTokenAuthenticator, type TokenReviewer, type TokenReviewResult } from './authn/token-review.js';
export { parseTrustedNodeAccounts, IMPERSONATED_IDENTITY, type PlacementCheck, type TrustedNodeAccount } from './authn/impersonation.js';
export { nodePlacement, type PlacedPod, type PodPlacements } from './authn/node-placement.js';
export { callerOf, guardStreams } from './authn/stream-guard.js';
export { authorizeProxy } from './authn/proxy-authorization.js';
export { DEFAULT_CSR_LIMITS, type CsrLimits } from './csr/csr-limits.js';
export { ISTIOD_CIPHERS, ISTIOD_TLS } from './tls-defaults.js';
export { CREATE_CERTIFICATE_PATH, CSR_SERVICE, csrServiceDefinition } from './csr/csr-service.js';
export { istiodDnsNames, SecureGrpcServer } from './csr/secure-server.js';
export { buildAuthenticators, startSecureGrpc, type RunningSecureGrpc, type SecureGrpcOptions, type SecureService } from './secure-grpc.js';
