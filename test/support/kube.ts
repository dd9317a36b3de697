/**
 * A real kube-apiserver + etcd per test file, from the shared scripts (`../shared/kube` beside the
 * repository, or MESHPILOT_KUBE_SCRIPTS): started in `before`, stopped in `after` (and, at the
 * latest, when the test process exits). Each test gets its own namespace. Istio's CRDs come from
 * the vendored istio/api file (proto/istio/SOURCE.md records the commit) and are applied and
 * waited on until Established.
 *
 * Tests skip — with the reason printed — only when the scripts themselves are missing; a server
 * that fails to start fails the test.
 */
import { execFile, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  ApiextensionsV1Api,
  CoreV1Api,
  KubeConfig as ClientNodeKubeConfig,
  type V1CustomResourceDefinition,
} from '@kubernetes/client-node';
import { fromKubeconfigFiles, type KubeConfig } from '../../src/kube/index.js';
import { SignJWT } from 'jose';
import { parseAllDocuments } from 'yaml';
import { atExit } from './cleanup.js';
import { REPO_ROOT } from './paths.js';
import { waitFor } from './wait.js';

const run = promisify(execFile);

/** The shared/kube scripts folder. */
export const KUBE_SCRIPTS = process.env.MESHPILOT_KUBE_SCRIPTS ?? join(REPO_ROOT, '..', 'shared', 'kube');

/** Istio's CRDs as vendored from istio/api (`kubernetes/customresourcedefinitions.gen.yaml`). */
export const ISTIO_CRDS_FILE = join(REPO_ROOT, 'proto', 'istio', 'kubernetes', 'customresourcedefinitions.gen.yaml');

/** For `before` hooks that start a cluster: the first build-apiserver on a machine takes ~10 minutes (then it is cached). */
export const KUBE_SETUP_TIMEOUT_MS = 50 * 60_000;

/** Why the kube tests cannot run on this machine (scripts missing), or undefined when they can. */
export function kubeSkipReason(): string | undefined {
  for (const script of ['build-apiserver', 'start-apiserver', 'stop-apiserver']) {
    const path = join(KUBE_SCRIPTS, script);
    if (!existsSync(path)) return `no real kube-apiserver: ${path} is missing (set MESHPILOT_KUBE_SCRIPTS to the shared/kube folder)`;
  }
  return undefined;
}

export interface KubeCluster {
  /** State folder of this server (certs, etcd data, logs, kubeconfig, pids). */
  readonly dir: string;
  readonly kubeconfigPath: string;
  /** Admin (system:masters) client config, as meshpilot's code takes it. */
  readonly kubeConfig: KubeConfig;
  /** The same admin config for client-node's typed APIs, which tests use to write objects. */
  readonly clientNode: ClientNodeKubeConfig;
  /** `https://127.0.0.1:PORT`. */
  readonly url: string;
  /** DIR/env of the server: KUBE_APISERVER_URL, KUBE_CA_FILE, KUBE_CLIENT_CERT_FILE, ETCD_URL, … */
  readonly env: Readonly<Record<string, string>>;
  /** A client config for the same server reached at another URL (a proxy in front of it). */
  kubeConfigVia(url: string): KubeConfig;
  /** The admin kubeconfig file's text with the server at another URL. */
  kubeconfigTextVia(url: string): string;
  /** Creates a namespace with a fresh name (`<prefix>-<random>`). */
  namespace(prefix: string, labels?: Record<string, string>): Promise<string>;
  /** Creates Istio's CRDs and waits until all are Established. */
  applyIstioCrds(): Promise<void>;
  /** Stops kube-apiserver only and starts it again with the same flags (same port, same etcd): watches break and its watch cache starts over. */
  restartApiserver(): Promise<void>;
  stop(): Promise<void>;
}

const live = new Set<string>();

/** Last resort: servers run detached, so a test process that exits without `after` must stop them. */
function stopAtExit(dir: string): void {
  atExit(() => {
    if (!live.has(dir)) return;
    execFileSync(join(KUBE_SCRIPTS, 'stop-apiserver'), [dir], { stdio: 'ignore', timeout: 20_000 });
    rmSync(dir, { recursive: true, force: true });
  });
}

function readEnv(dir: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of readFileSync(join(dir, 'env'), 'utf8').split('\n')) {
    const eq = line.indexOf('=');
    if (eq > 0) env[line.slice(0, eq)] = line.slice(eq + 1);
  }
  return env;
}

export interface KubeClusterOptions {
  /** Also run kube-controller-manager (garbage collection, namespaces, endpoints; built on first use). */
  readonly controllerManager?: boolean;
}

/** Builds (no-op once cached) and starts a server in a fresh folder (on tmpfs when there is one). */
export async function startKubeCluster(opts: KubeClusterOptions = {}): Promise<KubeCluster> {
  const skip = kubeSkipReason();
  if (skip) throw new Error(skip);
  const scriptEnv =
    opts.controllerManager === true
      ? { env: { ...process.env, KUBE_CONTROLLER_MANAGER: '1', KUBE_BUILD_EXTRA: 'kube-controller-manager' } }
      : {};
  // First build on a machine: ~10 minutes (the controller manager +3); afterwards it returns at once.
  await run(join(KUBE_SCRIPTS, 'build-apiserver'), [], { timeout: 45 * 60_000, ...scriptEnv });
  const dir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'meshpilot-kube-'));
  live.add(dir);
  stopAtExit(dir);
  let kubeconfigPath: string;
  try {
    kubeconfigPath = (await run(join(KUBE_SCRIPTS, 'start-apiserver'), [dir], { timeout: 5 * 60_000, ...scriptEnv })).stdout.trim();
  } catch (err) {
    const log = ['kube-apiserver.log', 'etcd.log'].map((f) => tail(join(dir, f))).join('\n');
    await stopDir(dir);
    throw new Error(`start-apiserver failed: ${(err as Error).message}\n${log}`, { cause: err });
  }
  const env = readEnv(dir);
  const url = env.KUBE_APISERVER_URL ?? '';
  const kubeConfig = fromKubeconfigFiles([kubeconfigPath]);
  const clientNode = new ClientNodeKubeConfig();
  clientNode.loadFromFile(kubeconfigPath);
  const core = clientNode.makeApiClient(CoreV1Api);

  return {
    dir,
    kubeconfigPath,
    kubeConfig,
    clientNode,
    url,
    env,
    kubeConfigVia: (other: string): KubeConfig => kubeConfig.withServer(other),
    kubeconfigTextVia: (other: string): string => readFileSync(kubeconfigPath, 'utf8').replace(`server: ${url}`, `server: ${other}`),
    async namespace(prefix, labels = {}) {
      const name = `${prefix}-${randomBytes(3).toString('hex')}`;
      await core.createNamespace({ body: { metadata: { name, labels } } });
      return name;
    },
    applyIstioCrds: () => applyCrds(clientNode, env, ISTIO_CRDS_FILE),
    restartApiserver: () => restartApiserver(dir, env),
    stop: () => stopDir(dir),
  };
}

async function stopDir(dir: string): Promise<void> {
  if (!live.delete(dir)) return;
  try {
    await run(join(KUBE_SCRIPTS, 'stop-apiserver'), [dir], { timeout: 60_000 });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-20).join('\n');
  } catch {
    return '';
  }
}

/** Creates every CRD of a multi-document YAML file (JSON as written) and waits until each is Established. */
export async function applyCrds(kc: ClientNodeKubeConfig, env: Readonly<Record<string, string>>, file: string): Promise<void> {
  const crds = parseAllDocuments(await readFile(file, 'utf8'))
    .map((d) => d.toJS() as V1CustomResourceDefinition | null)
    .filter((d): d is V1CustomResourceDefinition => d?.kind === 'CustomResourceDefinition');
  await Promise.all(
    crds.map(async (crd) => {
      const res = await adminRequest(env, 'POST', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd);
      if (res.status !== 201) throw new Error(`creating CRD ${crd.metadata?.name}: HTTP ${res.status} ${res.body}`);
    }),
  );
  const api = kc.makeApiClient(ApiextensionsV1Api);
  const names = new Set(crds.map((c) => c.metadata?.name ?? ''));
  await waitFor(
    async () => {
      const list = await api.listCustomResourceDefinition();
      const established = list.items.filter(
        (c) => names.has(c.metadata?.name ?? '') && c.status?.conditions?.some((k) => k.type === 'Established' && k.status === 'True'),
      );
      return established.length === names.size;
    },
    { timeoutMs: 60_000, intervalMs: 100, description: `${names.size} CRDs Established` },
  );
}

/**
 * A raw request on the API server with the admin client certificate: JSON exactly as given (the
 * typed client re-serialises bodies through its models, which drops CRD schema keys such as
 * `x-kubernetes-int-or-string`), and /readyz, which client-node has no call for.
 */
export function adminRequest(
  env: Readonly<Record<string, string>>,
  method: string,
  path: string,
  body?: unknown,
  contentType = 'application/json',
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    // A Buffer is sent as it is: JSON that JSON.stringify cannot produce (nested 9,000 levels deep).
    const payload = body === undefined ? undefined : Buffer.isBuffer(body) ? body : JSON.stringify(body);
    const req = request(
      `${env.KUBE_APISERVER_URL}${path}`,
      {
        method,
        ca: readFileSync(env.KUBE_CA_FILE ?? ''),
        cert: readFileSync(env.KUBE_CLIENT_CERT_FILE ?? ''),
        key: readFileSync(env.KUBE_CLIENT_KEY_FILE ?? ''),
        timeout: 10_000,
        headers: payload === undefined ? {} : { 'content-type': contentType, 'content-length': Buffer.byteLength(payload) },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(payload);
  });
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return existsSync(`/proc/${pid}`) && !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z ');
  } catch {
    return false;
  }
};

/**
 * Restarts kube-apiserver in place: its command line is read from /proc, the process stopped
 * (SIGTERM) and started again detached with the same arguments and log file, and DIR/pids is
 * updated so stop-apiserver stops the new process. etcd keeps running with all data.
 */
async function restartApiserver(dir: string, env: Record<string, string>): Promise<void> {
  const pidsFile = join(dir, 'pids');
  const lines = readFileSync(pidsFile, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '');
  const line = lines.find((l) => l.endsWith(' kube-apiserver'));
  const pid = Number(line?.split(' ')[0]);
  if (!line || !Number.isInteger(pid) || !alive(pid)) throw new Error(`no running kube-apiserver in ${pidsFile}`);
  const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8')
    .split('\0')
    .filter((a) => a !== '');
  const [bin, ...args] = argv;
  if (!bin || !argv.some((a) => a.includes(`${dir}/`))) throw new Error(`pid ${pid} is not this cluster's kube-apiserver`);
  process.kill(pid, 'SIGTERM');
  await waitFor(() => !alive(pid), { timeoutMs: 3_000, description: 'kube-apiserver to exit' }).catch(() => process.kill(pid, 'SIGKILL'));
  await waitFor(() => !alive(pid), { timeoutMs: 5_000, description: 'kube-apiserver to exit after SIGKILL' });

  const log = openSync(join(dir, 'kube-apiserver.log'), 'a');
  const child = spawn(bin, args, { detached: true, stdio: ['ignore', log, log] });
  closeSync(log);
  child.unref();
  if (child.pid === undefined) throw new Error('could not start kube-apiserver again');
  writeFileSync(pidsFile, lines.map((l) => (l === line ? `${child.pid} kube-apiserver` : l)).join('\n') + '\n');
  await waitFor(async () => (await adminRequest(env, 'GET', '/readyz')).body === 'ok', {
    timeoutMs: 120_000,
    intervalMs: 200,
    description: 'restarted kube-apiserver /readyz',
  });
}

/** The RBAC manifest meshpilot ships (ServiceAccount istiod, ClusterRole/Binding, Role/Binding in istio-system). */
export const MESHPILOT_RBAC_FILE = join(REPO_ROOT, 'manifests', 'rbac', 'meshpilot-rbac.yaml');

export interface ServiceAccountCredentials {
  /** A kubeconfig file that authenticates as the ServiceAccount (bearer token), for `--kubeconfig`. */
  readonly kubeconfigPath: string;
  readonly kubeConfig: KubeConfig;
  readonly token: string;
}

/** One object of the RBAC manifest, as parsed (tests may drop rules to see what a missing permission does). */
export interface RbacDocument {
  readonly kind?: string;
  readonly metadata?: { readonly name?: string };
  readonly rules?: readonly {
    readonly apiGroups?: readonly string[];
    readonly resources?: readonly string[];
    readonly verbs?: readonly string[];
  }[];
}

const RBAC_PATHS: Record<string, (ns: string) => string> = {
  ServiceAccount: (ns) => `/api/v1/namespaces/${ns}/serviceaccounts`,
  ClusterRole: () => '/apis/rbac.authorization.k8s.io/v1/clusterroles',
  ClusterRoleBinding: () => '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings',
  Role: (ns) => `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`,
  RoleBinding: (ns) => `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`,
};

/**
 * Applies manifests/rbac/meshpilot-rbac.yaml with `istio-system` replaced by `systemNamespace` (the
 * cluster-scoped names carry it, so several tests can share a server), then gets a token for the
 * `istiod` ServiceAccount with the TokenRequest API and writes a kubeconfig that uses it: meshpilot
 * run with it has exactly the manifest's permissions, not cluster-admin's.
 */
export async function meshpilotServiceAccount(
  cluster: KubeCluster,
  systemNamespace: string,
  edit?: (doc: RbacDocument) => RbacDocument,
): Promise<ServiceAccountCredentials> {
  const text = (await readFile(MESHPILOT_RBAC_FILE, 'utf8')).replaceAll('istio-system', systemNamespace);
  for (const parsed of parseAllDocuments(text).map((d) => d.toJS() as RbacDocument | null)) {
    const doc = parsed && edit ? edit(parsed) : parsed;
    if (!doc?.kind) continue;
    const path = RBAC_PATHS[doc.kind];
    if (!path) throw new Error(`${MESHPILOT_RBAC_FILE}: unexpected kind ${doc.kind}`);
    const res = await adminRequest(cluster.env, 'POST', path(systemNamespace), doc);
    if (res.status !== 201)
      throw new Error(`applying ${doc.kind} ${doc.metadata?.name} from ${MESHPILOT_RBAC_FILE}: HTTP ${res.status} ${res.body}`);
  }
  return serviceAccountCredentials(cluster, systemNamespace, 'istiod');
}

/** A TokenRequest token for an existing ServiceAccount and a kubeconfig file that uses it. */
export async function serviceAccountCredentials(cluster: KubeCluster, namespace: string, name: string): Promise<ServiceAccountCredentials> {
  const core = cluster.clientNode.makeApiClient(CoreV1Api);
  const tr = await core.createNamespacedServiceAccountToken({
    namespace,
    name,
    body: { spec: { audiences: [], expirationSeconds: 24 * 3600 } },
  });
  const token = tr.status?.token;
  if (!token) throw new Error(`TokenRequest for ${namespace}/${name} returned no token`);
  const kubeconfigPath = join(cluster.dir, `${name}-${namespace}.kubeconfig`);
  const caData = readFileSync(cluster.env.KUBE_CA_FILE ?? '').toString('base64');
  writeFileSync(
    kubeconfigPath,
    [
      'apiVersion: v1',
      'kind: Config',
      `clusters: [{name: test, cluster: {server: "${cluster.url}", certificate-authority-data: ${caData}}}]`,
      `users: [{name: sa, user: {token: "${token}"}}]`,
      `contexts: [{name: sa, context: {cluster: test, user: sa, namespace: ${namespace}}}]`,
      'current-context: sa',
      '',
    ].join('\n'),
  );
  return { kubeconfigPath, kubeConfig: fromKubeconfigFiles([kubeconfigPath]), token };
}

/**
 * A service-account JWT as the API server signs it: the same header (kid) and claims as `real` (a
 * TokenRequest token), its times replaced, signed with `key` — the API server's own key
 * (`<cluster.dir>/pki/sa.key`) for a token it would have issued, another for a forgery.
 */
export async function resignedToken(
  real: string,
  key: Parameters<SignJWT['sign']>[0],
  times: { iat: number; exp: number },
): Promise<string> {
  const [h, p] = real.split('.') as [string, string];
  const header = JSON.parse(Buffer.from(h, 'base64url').toString()) as { alg: string; kid?: string };
  const claims = JSON.parse(Buffer.from(p, 'base64url').toString()) as Record<string, unknown>;
  return new SignJWT({ ...claims, iat: times.iat, nbf: times.iat, exp: times.exp })
    .setProtectedHeader({ alg: header.alg, ...(header.kid ? { kid: header.kid } : {}) })
    .sign(key);
}
