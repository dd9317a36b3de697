/** The public surface of src/networking: what other folders import (SURFACE in scripts/layers.ts). */
export { DEFAULT_CLUSTER_ID } from './endpoint/istio-endpoint.js';
export { registerEnvoyGenerators } from './envoy-generators.js';
export { configCredentials } from './gateway/config-credentials.js';
export { registerGrpcGenerators } from './grpc/grpc-generators.js';
export { registerZtunnelGenerators } from './ambient/ztunnel-generators.js';
