/**
 * istioctl's meshnetworks.MeshNetworksAnalyzer (IST0126): a mesh network's `fromRegistry`
 * endpoints must name a known service registry — Kubernetes, External, Mock, or a remote cluster
 * of a multicluster Secret (`istio/multiCluster: "true"`, one key per cluster).
 */
import { MSG } from '../analyze/messages.js';
import { objectsOf, type Analyzer } from '../analyze/model.js';
import { recordAt } from './k8s-fields.js';

const BUILTIN_REGISTRIES = ['Mock', 'Kubernetes', 'External'];

export const meshNetworksAnalyzer: Analyzer = {
  name: 'meshnetworks.MeshNetworksAnalyzer',
  description: 'Check the validity of MeshNetworks in the cluster',
  messages: [MSG.UnknownMeshNetworksServiceRegistry],
  analyze(s, report) {
    const mn = s.meshNetworks;
    if (!mn) return;
    const known = new Set(BUILTIN_REGISTRIES);
    for (const secret of objectsOf(s, 'Secret')) {
      if (secret.labels['istio/multiCluster'] !== 'true') continue;
      for (const k of Object.keys(recordAt(secret.body, 'data') ?? {})) known.add(k);
      for (const k of Object.keys(recordAt(secret.body, 'stringData') ?? {})) known.add(k);
    }
    for (const [network, n] of Object.entries(mn.spec.networks)) {
      for (const e of n.endpoints) {
        if (e.fromRegistry !== undefined && !known.has(e.fromRegistry))
          report({ type: MSG.UnknownMeshNetworksServiceRegistry, resource: mn.ref, args: [e.fromRegistry, network] });
      }
    }
  },
};
