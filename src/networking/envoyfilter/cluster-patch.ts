import { ClusterSchema, type Cluster } from '../../gen/envoy/config/cluster/v3/cluster_pb.js';
import type { TransportSocket } from '../../gen/envoy/config/core/v3/base_pb.js';
import { mergeValue, patchesOf, valueOf, type PatchRun } from './listener-patch.js';
import { clusterMatches, contextMatches, isMerge } from './match.js';
import { ApplyTo, Op, PatchContext } from '../../model/index.js';
import { mergeAnyWithAny } from './proto-merge.js';

/**
 * istiod's ApplyClusterMerge: false when a matching REMOVE drops the cluster, else merges in place.
 * `hosts`: the service hostnames behind an inbound cluster (its name carries none).
 */
export function patchCluster(ctx: PatchContext, run: PatchRun, c: Cluster, hosts: readonly string[] = []): boolean {
  for (const p of patchesOf(run, ApplyTo.CLUSTER)) {
    const matches = contextMatches(ctx, p) && clusterMatches(c, p, hosts);
    if (p.operation === Op.REMOVE && matches) {
      run.touched.add(p.key);
      return false;
    }
    if (!isMerge(p.operation) || !matches) continue;
    const ts = mergeTransportSocket(run, c, (p.value as Cluster | undefined)?.transportSocket);
    if (ts === 'error') continue;
    run.touched.add(p.key);
    if (!ts) mergeValue(ClusterSchema, c, p);
  }
  return true;
}

/**
 * istiod's mergeTransportSocketCluster: a patch with a transport socket touches only the socket
 * (the rest of the patch is not merged): merged into the socket (or the transport_socket_matches
 * entry) of the same name, set when there is none of that name, ignored when only other matches exist.
 */
function mergeTransportSocket(run: PatchRun, c: Cluster, patch: TransportSocket | undefined): boolean | 'error' {
  if (!patch) return false;
  let ts: TransportSocket | undefined;
  if (c.transportSocketMatches.length > 0) {
    ts = c.transportSocketMatches.find((m) => m.transportSocket?.name === patch.name)?.transportSocket;
    if (!ts) return true;
  } else if (c.transportSocket?.name === patch.name) {
    ts = c.transportSocket;
  }
  if (!ts) {
    c.transportSocket = patch;
    return true;
  }
  if (ts.configType.case === 'typedConfig' && patch.configType.case === 'typedConfig') {
    const merged = mergeAnyWithAny(ts.configType.value, patch.configType.value, run.registry);
    if (!merged) return 'error';
    ts.configType = { case: 'typedConfig', value: merged };
  }
  return true;
}

/** istiod's InsertedClusters: CLUSTER ADDs of this context (without a context: sidecar outbound and gateways only). */
export function insertedClusters(ctx: PatchContext, run: PatchRun): Cluster[] {
  const out: Cluster[] = [];
  for (const p of patchesOf(run, ApplyTo.CLUSTER)) {
    if (p.operation !== Op.ADD) continue;
    if (p.context === PatchContext.ANY && ctx !== PatchContext.SIDECAR_OUTBOUND && ctx !== PatchContext.GATEWAY) continue;
    if (!contextMatches(ctx, p)) continue;
    run.touched.add(p.key);
    out.push(valueOf(ClusterSchema, p));
  }
  return out;
}
