/**
 * The API servers of a multi-network scenario (test/support/multi-network/capture.ts): one real
 * kube-apiserver per cluster with its state applied, and for every remote cluster an
 * istio/multiCluster Secret in the primary's istio-system holding a kubeconfig of that cluster (a
 * TokenRequest token of a reader account, the CA inline — what `meshctl create-remote-secret`
 * writes, without needing the token controller). Shared by the capture script and the golden test,
 * so istiod and meshpilot read the very same clusters.
 */
import { readFileSync } from 'node:fs';
import { applyClusterState, loadClusterState } from '../ambient/cluster-state.js';
import { adminRequest, meshpilotServiceAccount, startKubeCluster, type KubeCluster } from '../kube.js';
import type { MultiNetworkScenario } from './capture.js';

/** Istio's system namespace: every scenario's state creates it in every cluster. */
export const SYSTEM_NAMESPACE = 'istio-system';

export interface ScenarioClusters {
  /** The cluster the control plane runs against. */
  readonly primary: KubeCluster;
  readonly all: readonly KubeCluster[];
  stop(): Promise<void>;
}

/** Starts the scenario's API servers, applies each one's state, then registers the remotes with the primary. */
export async function startScenarioClusters(scenario: MultiNetworkScenario): Promise<ScenarioClusters> {
  const all: KubeCluster[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(all.map((c) => c.stop()));
  };
  try {
    for (const { dir } of scenario.clusters) {
      const cluster = await startKubeCluster();
      all.push(cluster);
      await applyClusterState(cluster, loadClusterState(dir));
    }
    const [primary] = all as [KubeCluster, ...KubeCluster[]];
    for (const [i, { id }] of scenario.clusters.entries()) {
      if (i === 0) continue;
      await createRemoteSecret(primary, id, all[i]!);
    }
    return { primary, all, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

const READER_EXTRA_RULES = [
  { apiGroups: [''], resources: ['secrets'], verbs: ['get', 'list', 'watch'] },
  { apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions'], verbs: ['get', 'list', 'watch'] },
];

/** `istio-remote-secret-<id>` in the primary's system namespace, as create-remote-secret prints it. */
async function createRemoteSecret(primary: KubeCluster, id: string, remote: KubeCluster): Promise<void> {
  // The control plane's RBAC plus what Istio's istio-reader-clusterrole adds for a remote cluster:
  // istiod's remote controllers list Secrets and CRDs cluster-wide and never sync without them.
  const creds = await meshpilotServiceAccount(remote, SYSTEM_NAMESPACE, (doc) =>
    doc.kind === 'ClusterRole' ? { ...doc, rules: [...(doc.rules ?? []), ...READER_EXTRA_RULES] } : doc,
  );
  const secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: `istio-remote-secret-${id}`,
      namespace: SYSTEM_NAMESPACE,
      labels: { 'istio/multiCluster': 'true' },
      annotations: { 'networking.istio.io/cluster': id },
    },
    stringData: { [id]: readFileSync(creds.kubeconfigPath, 'utf8') },
  };
  const res = await adminRequest(primary.env, 'POST', `/api/v1/namespaces/${SYSTEM_NAMESPACE}/secrets`, secret);
  if (res.status !== 201) throw new Error(`creating the remote Secret of ${id}: HTTP ${res.status} ${res.body}`);
}
