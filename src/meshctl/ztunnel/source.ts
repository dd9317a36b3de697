/**
 * Where ztunnel-config gets a config_dump: a file (`-f`, `-` for stdin), a ztunnel admin address
 * (`--ztunnel-admin`, meshctl's own: no cluster needed), or a ztunnel pod of the cluster chosen as
 * istioctl chooses it (istioctl/pkg/ztunnelconfig: the DaemonSet `ztunnel` of the Istio
 * namespace, a named pod, the ztunnel on `--node`, or the ztunnel on the node of a named workload
 * pod). istioctl port-forwards to the pod's admin port; meshctl asks the API server's pod proxy
 * (`pods/<name>:<port>/proxy/config_dump`), which needs no streaming protocol (RBAC: `pods/proxy`
 * get, where istioctl needs `pods/portforward` create).
 */
import { readFile } from 'node:fs/promises';
import { request } from 'node:http';
import path from 'node:path';
import type { KubeJsonObject } from '../../config/sources/kube/index.js';
import { KubeApiError, type KubeClient } from '../../kube/index.js';
import { MeshError, errorMessage } from '../../util/errors.js';
import { UsageError, type CliIO } from '../io.js';

const ADMIN_TIMEOUT_MS = 10_000;

export async function readDumpFile(file: string, io: CliIO): Promise<string> {
  if (file === '-') {
    if (!io.readStdin) throw new UsageError('-f -: stdin is not available');
    return io.readStdin();
  }
  try {
    return await readFile(path.resolve(io.cwd, file), 'utf8');
  } catch (err) {
    throw new MeshError('NOT_FOUND', `cannot read the config dump ${file}: ${errorMessage(err)}`);
  }
}

/** `host:port`, `[v6]:port` or an http:// URL → the config_dump URL. */
export function adminDumpUrl(admin: string): URL {
  const base = /^https?:\/\//.test(admin) ? admin : `http://${admin}`;
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw new UsageError(`invalid --ztunnel-admin "${admin}": give host:port of the ztunnel admin server (default port 15000)`);
  }
  if (url.protocol !== 'http:') throw new UsageError(`invalid --ztunnel-admin "${admin}": the ztunnel admin server speaks plain http`);
  if (url.port === '') url.port = '15000';
  url.pathname = '/config_dump';
  return url;
}

/** GET /config_dump from a ztunnel admin server. */
export function fetchAdminDump(admin: string): Promise<string> {
  const url = adminDumpUrl(admin);
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'GET', timeout: ADMIN_TIMEOUT_MS }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () =>
        res.statusCode === 200
          ? resolve(body)
          : reject(
              new MeshError(
                'UNAVAILABLE',
                `ztunnel admin ${url.host} answered HTTP ${res.statusCode} to /config_dump: ${body.slice(0, 200)}`,
              ),
            ),
      );
      res.on('error', reject);
    });
    req.on('timeout', () =>
      req.destroy(new MeshError('DEADLINE_EXCEEDED', `ztunnel admin ${url.host}: no answer within ${ADMIN_TIMEOUT_MS / 1000} s`)),
    );
    req.on('error', (err) => reject(new MeshError('UNAVAILABLE', `cannot reach the ztunnel admin at ${url.host}: ${errorMessage(err)}`)));
    req.end();
  });
}

export interface PodRef {
  readonly name: string;
  readonly namespace: string;
}

export interface ClusterTarget {
  /** The ztunnel pod to ask. */
  readonly ztunnel: PodRef;
  /** The workload pod the user named, when it was not a ztunnel (output is filtered to it). */
  readonly workload?: PodRef;
}

export interface PodSelection {
  /** The positional argument: `[<type>/]<name>[.<namespace>]`. */
  readonly target?: string;
  readonly node?: string;
  /** -n, else the Istio namespace (as istioctl's getComponentPodName). */
  readonly namespace: string;
  readonly istioNamespace: string;
  /** Commands whose output is per ztunnel (certificates, connections) refuse to pick one of several. */
  readonly enforceSinglePod: boolean;
}

type Pod = KubeJsonObject & {
  metadata?: { name?: string; namespace?: string; labels?: Record<string, string>; creationTimestamp?: string };
  spec?: { nodeName?: string };
  status?: { phase?: string; conditions?: { type?: string; status?: string }[] };
};

const podsPath = (ns: string): string => `/api/v1/namespaces/${encodeURIComponent(ns)}/pods`;

function podReady(p: Pod): boolean {
  return (p.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

/** kubectl's ByLogging order, reduced to what decides among ztunnels: scheduled, running, ready first. */
function byLogging(a: Pod, b: Pod): number {
  const rank = (p: Pod): number => (p.spec?.nodeName ? 0 : 4) + (p.status?.phase === 'Running' ? 0 : 2) + (podReady(p) ? 0 : 1);
  return rank(a) - rank(b) || (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? '');
}

async function listPods(rest: KubeClient, ns: string, labelSelector: string, fieldSelector?: string): Promise<Pod[]> {
  const q = new URLSearchParams({ labelSelector, ...(fieldSelector ? { fieldSelector } : {}) });
  const list = (await rest.call('GET', `${podsPath(ns)}?${q.toString()}`)) as { items?: Pod[] };
  return [...(list.items ?? [])].sort(byLogging);
}

async function daemonSetPods(rest: KubeClient, name: string, ns: string, fieldSelector?: string): Promise<Pod[]> {
  const ds = (await rest.getOrUndefined(`/apis/apps/v1/namespaces/${encodeURIComponent(ns)}/daemonsets/${encodeURIComponent(name)}`)) as
    { spec?: { selector?: { matchLabels?: Record<string, string> } } } | undefined;
  if (!ds) throw new MeshError('NOT_FOUND', `daemonsets.apps "${name}" not found in namespace ${ns}`);
  const labels = ds.spec?.selector?.matchLabels;
  if (!labels || Object.keys(labels).length === 0) throw new MeshError('INVALID_ARGUMENT', 'selector is required');
  return listPods(
    rest,
    ns,
    Object.entries(labels)
      .map(([k, v]) => `${k}=${v}`)
      .join(','),
    fieldSelector,
  );
}

/** The ztunnel of the DaemonSet on `node` (istioctl's PodOnNodeFromDaemonset). */
async function ztunnelOnNode(rest: KubeClient, node: string, istioNamespace: string): Promise<PodRef> {
  const pods = await daemonSetPods(rest, 'ztunnel', istioNamespace, `spec.nodeName=${node}`);
  const first = pods[0];
  if (!first) throw new MeshError('NOT_FOUND', 'no pods found');
  return { name: first.metadata?.name ?? '', namespace: istioNamespace };
}

/** `[<type>/]<name>[.<namespace>]`: pods of a pod or a DaemonSet (the types ztunnel-config looks up). */
async function inferPods(rest: KubeClient, target: string, defaultNs: string): Promise<PodRef[]> {
  const slash = target.indexOf('/');
  const type = slash >= 0 ? target.slice(0, slash).toLowerCase() : 'pod';
  let name = slash >= 0 ? target.slice(slash + 1) : target;
  let ns = defaultNs;
  const dot = name.indexOf('.');
  if (dot >= 0) {
    ns = name.slice(dot + 1);
    name = name.slice(0, dot);
  }
  if (['pod', 'pods', 'po'].includes(type)) return [{ name, namespace: ns }];
  if (['daemonset', 'daemonsets', 'ds'].includes(type)) {
    const pods = await daemonSetPods(rest, name, ns);
    if (pods.length === 0) throw new MeshError('NOT_FOUND', `no pods found for daemonset/${name} in namespace ${ns}`);
    return pods.map((p) => ({ name: p.metadata?.name ?? '', namespace: ns }));
  }
  throw new UsageError(`cannot look up "${target}": give a pod (<name>[.<namespace>]) or daemonset/<name>[.<namespace>]`);
}

/** istioctl's IsZtunnelPod: the `app` label says, else the name's `ztunnel` prefix. */
function isZtunnelPod(pod: Pod | undefined, name: string): boolean {
  const app = pod?.metadata?.labels?.app;
  return app !== undefined ? app === 'ztunnel' : name.startsWith('ztunnel');
}

/** Which ztunnel to ask, chosen as istioctl's runConfigDump chooses it. */
export async function selectZtunnel(rest: KubeClient, sel: PodSelection): Promise<ClusterTarget> {
  let pod: PodRef;
  if (sel.node !== undefined) pod = await ztunnelOnNode(rest, sel.node, sel.istioNamespace);
  else {
    const pods = await inferPods(rest, sel.target ?? 'daemonset/ztunnel', sel.namespace);
    if (sel.enforceSinglePod && sel.target === undefined && pods.length !== 1)
      throw new UsageError('ztunnel pod name or --node must be set');
    pod = pods[0]!;
  }
  const obj = (await rest.getOrUndefined(`${podsPath(pod.namespace)}/${encodeURIComponent(pod.name)}`)) as Pod | undefined;
  if (isZtunnelPod(obj, pod.name)) return { ztunnel: pod };
  // A workload pod: ask the ztunnel of its node, and show only that workload.
  if (!obj) throw new MeshError('NOT_FOUND', `failed to get pod ${pod.name}.${pod.namespace}: pods "${pod.name}" not found`);
  const node = obj.spec?.nodeName;
  if (!node) throw new MeshError('FAILED_PRECONDITION', `pod ${pod.name}.${pod.namespace} is not scheduled to a node`);
  try {
    return { ztunnel: await ztunnelOnNode(rest, node, sel.istioNamespace), workload: pod };
  } catch (err) {
    throw new MeshError('NOT_FOUND', `failed to find ztunnel on node ${node} for pod ${pod.name}.${pod.namespace}: ${errorMessage(err)}`);
  }
}

/** The pod's config_dump through the API server's pod proxy. */
export async function fetchPodDump(rest: KubeClient, pod: PodRef, adminPort: number): Promise<string> {
  const p = `${podsPath(pod.namespace)}/${encodeURIComponent(`${pod.name}:${adminPort}`)}/proxy/config_dump`;
  try {
    // ztunnel writes its dump indented by 2; the proxy hands back JSON, which is written the same way.
    return JSON.stringify(await rest.call('GET', p), null, 2);
  } catch (err) {
    const why = err instanceof KubeApiError ? err.message : errorMessage(err);
    throw new MeshError('UNAVAILABLE', `failed to execute command on ${pod.name}.${pod.namespace} Ztunnel: ${why}`);
  }
}
