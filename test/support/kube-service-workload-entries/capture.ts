/**
 * The scenario of testdata/kube-service-workload-entries/cluster/ (Kubernetes Services selecting
 * WorkloadEntries): the sidecar that reads it and what is read — the ClusterLoadAssignments of the
 * `vm` Services, whole, as proto3 JSON. Used by scripts/compare-kube-service-workload-entries.ts
 * (against istiod, writing the golden) and test/e2e/kube-service-workload-entries.test.ts (against
 * meshpilot), so both read the same way.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { JsonValue } from '@bufbuild/protobuf';
import { captureEndpoints } from '../multi-network/capture.js';
import { REPO_ROOT } from '../paths.js';
import type { NodeSpec } from '../scenario.js';

export const KUBE_WLE_DIR = join(REPO_ROOT, 'testdata', 'kube-service-workload-entries');
export const KUBE_WLE_CLUSTER_DIR = join(KUBE_WLE_DIR, 'cluster');
export const KUBE_WLE_GOLDEN = join(KUBE_WLE_DIR, 'istiod', 'eds.json');

export const KUBE_WLE_PROXY: NodeSpec = { id: 'sidecar~10.66.0.9~client-1.shop~shop.svc.cluster.local', labels: { app: 'client' } };

/** The clusters compared: the Services that select (or, headless and elsewhere, must not select) the entries. */
export const KUBE_WLE_CLUSTERS = [
  'outbound|70||vm.shop.svc.cluster.local',
  'outbound|80||vm.other.svc.cluster.local',
  'outbound|80||vm.shop.svc.cluster.local',
] as const;

interface ClaJson {
  endpoints?: {
    locality?: JsonValue;
    lbEndpoints?: { endpoint?: { address?: { socketAddress?: { address?: string; portValue?: number } } } }[];
  }[];
}

const addressOf = (e: NonNullable<NonNullable<ClaJson['endpoints']>[number]['lbEndpoints']>[number]): string =>
  `${e.endpoint?.address?.socketAddress?.address ?? ''}:${e.endpoint?.address?.socketAddress?.portValue ?? 0}`;

/**
 * Locality groups in locality order, each one's endpoints in address order: istiod walks its
 * WorkloadEntry instances in Go map order (random per process), so the order it appends them in,
 * and with it the order of the locality groups, is no fact to compare.
 */
function sorted(cla: JsonValue | undefined): JsonValue {
  if (cla === undefined || cla === null) return null;
  const c = structuredClone(cla) as ClaJson;
  for (const group of c.endpoints ?? [])
    group.lbEndpoints?.sort((a, b) => (addressOf(a) < addressOf(b) ? -1 : addressOf(a) > addressOf(b) ? 1 : 0));
  c.endpoints?.sort((a, b) => {
    const x = JSON.stringify(a.locality ?? {});
    const y = JSON.stringify(b.locality ?? {});
    return x < y ? -1 : x > y ? 1 : 0;
  });
  return c as JsonValue;
}

/** The compared ClusterLoadAssignments a control plane serves the sidecar, by cluster name (order normalised, see sorted). */
export async function captureVmEndpoints(grpcAddr: string): Promise<Record<string, JsonValue>> {
  const all = await captureEndpoints(grpcAddr, KUBE_WLE_PROXY);
  return Object.fromEntries(KUBE_WLE_CLUSTERS.map((c) => [c, sorted(all[c])]));
}

/** sha256 of the state files and the proxy: the golden records it, so a stale capture is told apart from a regression. */
export function kubeWleDigest(): string {
  const h = createHash('sha256');
  for (const f of readdirSync(KUBE_WLE_CLUSTER_DIR)
    .filter((n) => /\.ya?ml$/.test(n))
    .sort())
    h.update(`${f}\0${readFileSync(join(KUBE_WLE_CLUSTER_DIR, f), 'utf8')}\0`);
  h.update(JSON.stringify(KUBE_WLE_PROXY));
  return h.digest('hex');
}
