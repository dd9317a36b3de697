/**
 * The ambient cluster state (testdata/ambient/cluster/*.yaml): loaded with every document checked,
 * and applied to a real kube-apiserver as a cluster would hold it — objects created in file order,
 * then the `status` of Pods and Nodes written through the status subresource (no kubelet runs).
 * Used by scripts/capture-ambient-goldens.ts (against istiod) and test/e2e/ambient-golden.test.ts
 * (against meshpilot), so both control planes read the very same objects.
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { adminRequest, applyCrds, type KubeCluster } from '../kube.js';
import { REPO_ROOT } from '../paths.js';
import { waitFor } from '../wait.js';

export const AMBIENT_DIR = join(REPO_ROOT, 'testdata', 'ambient');
export const AMBIENT_CLUSTER_DIR = join(AMBIENT_DIR, 'cluster');
const GATEWAY_API_CRD_DIR = join(REPO_ROOT, 'manifests', 'crds', 'gateway-api');

/**
 * What the control plane is told beyond its defaults, the same for istiod and meshpilot: ambient
 * on, and the gateway deployment controller off (the state holds the waypoint's Service and Pod as
 * that controller and a kubelet would leave them; nothing would run its Deployment here).
 */
export const AMBIENT_CONTROL_PLANE_ENV = { PILOT_ENABLE_AMBIENT: 'true', PILOT_ENABLE_GATEWAY_API_DEPLOYMENT_CONTROLLER: 'false' } as const;

export interface KubeObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly namespace?: string; readonly labels?: Record<string, string> };
  readonly spec?: Record<string, unknown>;
  readonly status?: Record<string, unknown>;
  readonly [k: string]: unknown;
}

/** Where an object came from, for error messages. */
export interface Located {
  readonly object: KubeObject;
  readonly where: string;
}

/**
 * Kind → REST plural, whether the kind is cluster-scoped, has a status subresource, and is ordered by
 * creation time by the control plane (istiod sorts a waypoint's services by creationTimestamp, which
 * has whole seconds, then by name: each such object is created in a second of its own, so the order
 * is the file order on every run, not whichever objects happened to share a second).
 * A kind not listed here is an error, not skipped.
 */
const KINDS: Readonly<Record<string, { plural: string; clusterScoped?: true; statusSubresource?: true; creationOrdered?: true }>> = {
  Namespace: { plural: 'namespaces', clusterScoped: true },
  Node: { plural: 'nodes', clusterScoped: true, statusSubresource: true },
  Pod: { plural: 'pods', statusSubresource: true },
  Service: { plural: 'services', creationOrdered: true, statusSubresource: true },
  ConfigMap: { plural: 'configmaps' },
  ServiceAccount: { plural: 'serviceaccounts' },
  EndpointSlice: { plural: 'endpointslices' },
  GatewayClass: { plural: 'gatewayclasses', clusterScoped: true },
  Gateway: { plural: 'gateways' },
  ServiceEntry: { plural: 'serviceentries', creationOrdered: true },
  WorkloadEntry: { plural: 'workloadentries', statusSubresource: true },
  PeerAuthentication: { plural: 'peerauthentications' },
  AuthorizationPolicy: { plural: 'authorizationpolicies' },
};

/** Every object of the state, in file order then document order; a malformed document names its file and line. */
export function loadClusterState(dir = AMBIENT_CLUSTER_DIR): Located[] {
  const out: Located[] = [];
  for (const file of readdirSync(dir)
    .filter((f) => /\.ya?ml$/.test(f))
    .sort()) {
    const text = readFileSync(join(dir, file), 'utf8');
    for (const doc of parseAllDocuments(text)) {
      const line = text.slice(0, doc.range[0]).split('\n').length;
      const where = `${file}:${line}`;
      if (doc.errors.length > 0) throw new Error(`${where}: ${doc.errors[0]?.message}`);
      const o = doc.toJS() as Partial<KubeObject> | null;
      if (o === null || o === undefined) continue;
      if (typeof o.apiVersion !== 'string' || typeof o.kind !== 'string') throw new Error(`${where}: apiVersion and kind are required`);
      if (typeof o.metadata?.name !== 'string') throw new Error(`${where}: ${o.kind} without metadata.name`);
      const k = KINDS[o.kind];
      if (!k) throw new Error(`${where}: kind ${o.kind} is not one a cluster state applies (known: ${Object.keys(KINDS).join(', ')})`);
      if (!k.clusterScoped && !o.metadata.namespace) throw new Error(`${where}: ${o.kind} ${o.metadata.name} needs metadata.namespace`);
      out.push({ object: o as KubeObject, where });
    }
  }
  return out;
}

/** The REST path of `o`'s collection, or of `o` itself with `named`. */
function restPath(o: KubeObject, named = false): string {
  const k = KINDS[o.kind]!;
  const base = o.apiVersion.includes('/') ? `/apis/${o.apiVersion}` : `/api/${o.apiVersion}`;
  const ns = k.clusterScoped ? '' : `/namespaces/${o.metadata.namespace}`;
  return `${base}${ns}/${k.plural}${named ? `/${o.metadata.name}` : ''}`;
}

/**
 * Applies Istio's and the Gateway API CRDs, then every object of the state: created without its
 * status, then (Pods, Nodes) the status written as a kubelet would. Services and ServiceEntries
 * each get a creation second of their own (see KINDS), ~7 s in all.
 */
export async function applyClusterState(cluster: KubeCluster, state: readonly Located[] = loadClusterState()): Promise<void> {
  await cluster.applyIstioCrds();
  for (const f of readdirSync(GATEWAY_API_CRD_DIR)
    .filter((n) => n.endsWith('.yaml'))
    .sort())
    await applyCrds(cluster.clientNode, cluster.env, join(GATEWAY_API_CRD_DIR, f));
  let lastOrderedSecond = 0;
  for (const { object, where } of state) {
    const { status, ...withoutStatus } = object;
    if (KINDS[object.kind]?.creationOrdered) {
      // Until the API server's clock (this machine's) is past the second of the previous one.
      const wait = (lastOrderedSecond + 1) * 1000 - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait + 20));
    }
    const res = await adminRequest(cluster.env, 'POST', restPath(object), withoutStatus);
    if (res.status !== 201) throw new Error(`${where}: creating ${object.kind} ${object.metadata.name}: HTTP ${res.status} ${res.body}`);
    if (KINDS[object.kind]?.creationOrdered) {
      const created = (JSON.parse(res.body) as { metadata?: { creationTimestamp?: string } }).metadata?.creationTimestamp;
      lastOrderedSecond = Math.floor(Date.parse(created ?? '') / 1000);
      if (!Number.isFinite(lastOrderedSecond)) throw new Error(`${where}: no creationTimestamp on the created ${object.kind}`);
    }
    if (status === undefined || !KINDS[object.kind]?.statusSubresource) continue;
    const created = JSON.parse(res.body) as Record<string, unknown>;
    const put = await adminRequest(cluster.env, 'PUT', `${restPath(object, true)}/status`, { ...created, status });
    if (put.status !== 200) throw new Error(`${where}: status of ${object.kind} ${object.metadata.name}: HTTP ${put.status} ${put.body}`);
  }
}

/** The Gateways of class istio-waypoint in the state. */
export function waypointGateways(state: readonly Located[]): KubeObject[] {
  return state.map((l) => l.object).filter((o) => o.kind === 'Gateway' && o.spec?.gatewayClassName === 'istio-waypoint');
}

/**
 * Waits until the control plane has written `status.addresses` on every waypoint Gateway: the
 * ambient index only knows a waypoint by that address, so a capture before it would show
 * workloads without their waypoint. Returns the Gateways that still have none at the deadline
 * (the caller decides whether that is fatal).
 */
export async function waitForWaypointAddresses(cluster: KubeCluster, state: readonly Located[], timeoutMs: number): Promise<string[]> {
  const pending = async (): Promise<string[]> => {
    const out: string[] = [];
    for (const gw of waypointGateways(state)) {
      const res = await adminRequest(cluster.env, 'GET', restPath(gw, true));
      const addresses = (JSON.parse(res.body) as { status?: { addresses?: unknown[] } }).status?.addresses ?? [];
      if (addresses.length === 0) out.push(`${gw.metadata.namespace}/${gw.metadata.name}`);
    }
    return out;
  };
  try {
    await waitFor(async () => (await pending()).length === 0, {
      timeoutMs,
      intervalMs: 250,
      description: 'waypoint Gateway status addresses',
    });
    return [];
  } catch {
    return pending();
  }
}

/** sha256 of the state files (names and contents): a golden records it, so a stale capture is told apart from a regression. */
export function clusterStateDigest(dir = AMBIENT_CLUSTER_DIR): string {
  const h = createHash('sha256');
  for (const f of readdirSync(dir)
    .filter((n) => /\.ya?ml$/.test(n))
    .sort())
    h.update(`${f}\0${readFileSync(join(dir, f), 'utf8')}\0`);
  return h.digest('hex');
}
