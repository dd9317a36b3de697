export { buildEdsCluster, type EdsClusterInput } from './cluster-builder.js';
export { HTTP_PROTOCOL_OPTIONS, TLS_TRANSPORT_SOCKET } from './cluster-draft.js';
export {
  buildBlackHoleCluster,
  buildInboundPassthroughCluster,
  buildPassthroughCluster,
  INBOUND_PASSTHROUGH_BIND_V4,
  INBOUND_PASSTHROUGH_BIND_V6,
} from './fixed-clusters.js';
export { buildGatewayClusters, buildSidecarClusters } from './proxy-clusters.js';
export { buildInboundClusters, type InboundClusterContext } from './inbound-clusters.js';
export { buildOutboundClusters, buildSniDnatClusters, type OutboundClusterContext } from './outbound-clusters.js';
