import type { Cluster } from '../../gen/envoy/config/cluster/v3/cluster_pb.js';
import { buildBlackHoleCluster, buildInboundPassthroughCluster, buildPassthroughCluster } from './fixed-clusters.js';
import { buildInboundClusters, type InboundClusterContext } from './inbound-clusters.js';
import { buildOutboundClusters, type OutboundClusterContext } from './outbound-clusters.js';

/**
 * A router's clusters (istiod's BuildClusters, gateway branch): the outbound clusters of the services
 * it can reach, then BlackHoleCluster — no passthrough, a gateway has no original-destination
 * listener. SNI-DNAT clusters for AUTO_PASSTHROUGH servers come from buildSniDnatClusters.
 */
export function buildGatewayClusters(ctx: OutboundClusterContext): Cluster[] {
  return [...buildOutboundClusters(ctx), buildBlackHoleCluster(ctx.push)];
}

/**
 * A sidecar's whole CDS in istiod's order: outbound, BlackHoleCluster, PassthroughCluster, the
 * inbound clusters, InboundPassthroughCluster.
 */
export function buildSidecarClusters(ctx: OutboundClusterContext & InboundClusterContext): Cluster[] {
  return [
    ...buildOutboundClusters(ctx),
    buildBlackHoleCluster(ctx.push),
    buildPassthroughCluster(ctx.push),
    ...buildInboundClusters(ctx),
    buildInboundPassthroughCluster(ctx.push, ctx.proxy),
  ];
}
