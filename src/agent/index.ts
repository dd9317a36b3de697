export { startAgent, type AgentDeps, type RunningAgent } from './agent.js';
export { AGENT_USAGE, parseAgentOptions, type AgentMode, type AgentOptions, type XdsTransport } from './options.js';
export {
  caClient,
  controlPlaneChannel,
  CREATE_CERTIFICATE_PATH,
  type CaCredential,
  type CertSigner,
  type SignRequest,
} from './ca-client.js';
export { CertManager, type CertManagerOptions, type SecretListener, type WorkloadSecret } from './cert-manager.js';
export { certFilePaths, writeCertFiles, CERT_CHAIN_FILE, KEY_FILE, ROOT_CERT_FILE, type CertFilePaths } from './cert-files.js';
export { buildGrpcBootstrap, SERVER_LISTENER_NAME_TEMPLATE, type GrpcBootstrapOptions } from './grpc-bootstrap.js';
export { buildEnvoyBootstrap, XDS_CLUSTER, type EnvoyBootstrapOptions } from './envoy-bootstrap.js';
export { buildNode, type AgentNode, type NodeFacts } from './node-identity.js';
export { sdsServiceDefinition, startSdsServer, type SdsServer, type SecretSource } from './sds-server.js';
export { startXdsProxy, type XdsProxy, type XdsProxyOptions } from './xds-proxy.js';
