/**
 * Where and how to reach a Kubernetes API server: a kubeconfig file (or several, `KUBECONFIG`
 * merged as kubectl merges them), a kubeconfig's text (a remote cluster's, from a Secret), or the
 * Pod's service account. The result, {@link KubeConfig}, is one context resolved: the server URL,
 * its CA, the client certificate or the way to get a bearer token. Files named in a kubeconfig are
 * read here, once; only a token file (the service account's, which the kubelet rotates) is read
 * again later, by the client. A bad kubeconfig is refused with the file, line and field at fault.
 */
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { isIPv6 } from 'node:net';
import path from 'node:path';
import { LineCounter, parseDocument, type Document } from 'yaml';
import { MeshError } from '../util/errors.js';

/** A credential plugin (`users[].user.exec`, client.authentication.k8s.io). */
export interface ExecPlugin {
  readonly command: string;
  readonly args: readonly string[];
  readonly env: Readonly<Record<string, string>>;
  readonly apiVersion: string;
  /** Where it was configured, for errors: `file:line users[0].user.exec`. */
  readonly origin: string;
}

/** How requests authenticate besides a client certificate. */
export type KubeAuth =
  | { readonly kind: 'none' }
  | { readonly kind: 'token'; readonly token: string }
  /** Read again when older than a minute, as client-go does: the kubelet rotates projected tokens. */
  | { readonly kind: 'tokenFile'; readonly file: string }
  | { readonly kind: 'basic'; readonly username: string; readonly password: string }
  | { readonly kind: 'exec'; readonly exec: ExecPlugin };

export interface KubeTls {
  /** PEM; undefined: the system's roots. */
  readonly ca?: Buffer;
  readonly cert?: Buffer;
  readonly key?: Buffer;
  readonly insecureSkipTlsVerify: boolean;
  readonly serverName?: string;
}

/** One context of a kubeconfig, resolved. Immutable: a client built from it keeps it. */
export class KubeConfig {
  constructor(
    /** `https://host:port`, without a trailing slash. */
    readonly server: string,
    readonly tls: KubeTls,
    readonly auth: KubeAuth,
    /** The context's namespace, if it names one (what kubectl uses when -n is not given). */
    readonly namespace: string | undefined,
    /** The context's name (`inCluster` for the service account). */
    readonly contextName: string,
    /** Where it came from, for messages. */
    readonly origin: string,
  ) {}

  /** The same credentials for the server at another URL (a proxy in front of it). */
  withServer(server: string): KubeConfig {
    return new KubeConfig(trimSlash(server), this.tls, this.auth, this.namespace, this.contextName, this.origin);
  }
}

export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

export interface LoadKubeConfigOptions {
  /** A kubeconfig file (`--kubeconfig`). */
  readonly kubeconfig?: string;
  /** Context to use instead of the file's current-context. */
  readonly context?: string;
  /** The process environment: KUBECONFIG, HOME, KUBERNETES_SERVICE_HOST/PORT (default process.env). */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/**
 * The file if one is named; in a Pod (KUBERNETES_SERVICE_HOST set) the service account; otherwise
 * kubectl's lookup: the files of KUBECONFIG merged, then ~/.kube/config, then the service account
 * if its token is mounted.
 */
export function loadKubeConfig(opts: LoadKubeConfigOptions = {}): KubeConfig {
  const env = opts.env ?? process.env;
  const context = opts.context;
  if (opts.kubeconfig !== undefined) return fromKubeconfigFiles([opts.kubeconfig], context);
  if (env.KUBERNETES_SERVICE_HOST && context === undefined) return inClusterKubeConfig(env);
  const listed = (env.KUBECONFIG ?? '').split(path.delimiter).filter((f) => f !== '');
  if (listed.length > 0) return fromKubeconfigFiles(listed, context);
  const home = path.join(env.HOME ?? homedir(), '.kube', 'config');
  if (existsSync(home)) return fromKubeconfigFiles([home], context);
  if (existsSync(path.join(SERVICE_ACCOUNT_DIR, 'token')) && context === undefined) return inClusterKubeConfig(env);
  throw new MeshError('INVALID_ARGUMENT', `no kubeconfig: give --kubeconfig, set KUBECONFIG, or create ${home}`);
}

/**
 * The service account's config (client-go's InClusterConfig): the API server from
 * KUBERNETES_SERVICE_HOST/PORT, the CA and token mounted in `dir`, its namespace.
 */
export function inClusterKubeConfig(env: Readonly<Record<string, string | undefined>>, dir: string = SERVICE_ACCOUNT_DIR): KubeConfig {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port)
    throw new MeshError('INVALID_ARGUMENT', 'in-cluster config: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT must be set');
  const tokenFile = path.join(dir, 'token');
  if (!existsSync(tokenFile)) throw new MeshError('INVALID_ARGUMENT', `in-cluster config: no service account token at ${tokenFile}`);
  const caFile = path.join(dir, 'ca.crt');
  const namespaceFile = path.join(dir, 'namespace');
  const namespace = existsSync(namespaceFile) ? readFileSync(namespaceFile, 'utf8').trim() : undefined;
  return new KubeConfig(
    `https://${isIPv6(host) ? `[${host}]` : host}:${port}`,
    { ...(existsSync(caFile) ? { ca: readFileSync(caFile) } : {}), insecureSkipTlsVerify: false },
    { kind: 'tokenFile', file: tokenFile },
    namespace || undefined,
    'inCluster',
    `the service account in ${dir}`,
  );
}

export interface FromKubeconfigTextOptions {
  /** Context to use instead of current-context. */
  readonly context?: string;
  /** Names the text in errors (e.g. `Secret istio-system/istio-remote-secret-east key east`). */
  readonly origin?: string;
  /** Relative file paths in the text resolve against this (default: the working directory). */
  readonly baseDir?: string;
}

/** A kubeconfig given as text: a remote cluster's, from a Secret. */
export function fromKubeconfigText(text: string, opts: FromKubeconfigTextOptions = {}): KubeConfig {
  const file = parseKubeconfig(text, opts.origin ?? '<text>', opts.baseDir ?? process.cwd());
  return resolveContext(mergeKubeconfigs([file]), opts.context);
}

/** Several files merged as kubectl merges KUBECONFIG: the first file to define a name wins. */
export function fromKubeconfigFiles(files: readonly string[], context?: string): KubeConfig {
  const parsed = files.map((f) => {
    let text: string;
    try {
      text = readFileSync(f, 'utf8');
    } catch (err) {
      throw new MeshError('INVALID_ARGUMENT', `kubeconfig ${f}: cannot read: ${(err as Error).message}`);
    }
    return parseKubeconfig(text, f, path.dirname(path.resolve(f)));
  });
  return resolveContext(mergeKubeconfigs(parsed), context);
}

/** The names of a kubeconfig's contexts and its current one. */
export function kubeconfigContexts(text: string, origin = '<text>'): { contexts: string[]; current: string | undefined } {
  const file = parseKubeconfig(text, origin, process.cwd());
  return { contexts: [...file.contexts.keys()], current: file.currentContext };
}

// --- parsing ---

type Fields = Readonly<Record<string, unknown>>;

/** A named entry of a kubeconfig list, with where it is for errors. */
interface Entry {
  readonly fields: Fields;
  /** `file:line <list>[i].<field>` */
  readonly at: string;
  readonly baseDir: string;
}

interface ParsedKubeconfig {
  readonly clusters: Map<string, Entry>;
  readonly users: Map<string, Entry>;
  readonly contexts: Map<string, Entry>;
  readonly currentContext: string | undefined;
  readonly origin: string;
}

function parseKubeconfig(text: string, origin: string, baseDir: string): ParsedKubeconfig {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, uniqueKeys: false });
  if (doc.errors.length > 0) {
    const e = doc.errors[0]!;
    throw new MeshError('INVALID_ARGUMENT', `kubeconfig ${origin}:${e.linePos?.[0].line ?? '?'}: not YAML: ${e.message.split('\n')[0]}`);
  }
  const root = doc.toJS() as unknown;
  if (root !== null && root !== undefined && (typeof root !== 'object' || Array.isArray(root)))
    throw new MeshError('INVALID_ARGUMENT', `kubeconfig ${origin}: not a kubeconfig (the document is not a mapping)`);
  const top = (root ?? {}) as Fields;
  const where = (keys: (string | number)[]): string => `${origin}:${lineOf(doc, lines, keys)} ${fieldPath(keys)}`;
  const list = (key: 'clusters' | 'users' | 'contexts', inner: string): Map<string, Entry> => {
    const out = new Map<string, Entry>();
    const items = top[key] ?? [];
    if (!Array.isArray(items)) throw new MeshError('INVALID_ARGUMENT', `kubeconfig ${where([key])}: must be a list`);
    items.forEach((item: unknown, i) => {
      const name = (item as Fields | null)?.name;
      if (typeof name !== 'string' || name === '')
        throw new MeshError('INVALID_ARGUMENT', `kubeconfig ${where([key, i])}: an entry without a name`);
      const fields = (item as Fields)[inner] ?? {};
      if (typeof fields !== 'object' || fields === null || Array.isArray(fields))
        throw new MeshError('INVALID_ARGUMENT', `kubeconfig ${where([key, i, inner])}: must be a mapping`);
      if (!out.has(name)) out.set(name, { fields: fields as Fields, at: where([key, i, inner]), baseDir });
    });
    return out;
  };
  const current = top['current-context'];
  return {
    clusters: list('clusters', 'cluster'),
    users: list('users', 'user'),
    contexts: list('contexts', 'context'),
    currentContext: typeof current === 'string' && current !== '' ? current : undefined,
    origin,
  };
}

function fieldPath(keys: readonly (string | number)[]): string {
  return keys.map((k, i) => (typeof k === 'number' ? `[${k}]` : i === 0 ? k : `.${k}`)).join('');
}

function lineOf(doc: Document, lines: LineCounter, keys: readonly (string | number)[]): number | string {
  for (let n = keys.length; n > 0; n--) {
    const start = (doc.getIn(keys.slice(0, n), true) as { range?: readonly number[] } | undefined)?.range?.[0];
    if (start !== undefined) return lines.linePos(start).line;
  }
  return 1;
}

function mergeKubeconfigs(files: readonly ParsedKubeconfig[]): ParsedKubeconfig {
  const merge = (key: 'clusters' | 'users' | 'contexts'): Map<string, Entry> => {
    const out = new Map<string, Entry>();
    for (const f of files) for (const [name, e] of f[key]) if (!out.has(name)) out.set(name, e);
    return out;
  };
  return {
    clusters: merge('clusters'),
    users: merge('users'),
    contexts: merge('contexts'),
    currentContext: files.find((f) => f.currentContext !== undefined)?.currentContext,
    origin: files.map((f) => f.origin).join(path.delimiter),
  };
}

// --- resolving one context ---

function resolveContext(file: ParsedKubeconfig, wanted: string | undefined): KubeConfig {
  const name = wanted ?? file.currentContext;
  if (name === undefined)
    throw new MeshError('INVALID_ARGUMENT', `kubeconfig ${file.origin}: no current-context, and no context was named`);
  const context = file.contexts.get(name);
  if (!context) throw new MeshError('INVALID_ARGUMENT', `kubeconfig ${file.origin}: no context "${name}"`);
  const clusterName = str(context, 'cluster');
  const cluster = clusterName !== undefined ? file.clusters.get(clusterName) : undefined;
  if (!cluster)
    throw new MeshError('INVALID_ARGUMENT', `kubeconfig ${context.at}.cluster: names cluster "${clusterName ?? ''}", which is not defined`);
  const userName = str(context, 'user');
  const user = userName !== undefined && userName !== '' ? file.users.get(userName) : undefined;
  if (userName !== undefined && userName !== '' && !user)
    throw new MeshError('INVALID_ARGUMENT', `kubeconfig ${context.at}.user: names user "${userName}", which is not defined`);
  const server = str(cluster, 'server');
  if (server === undefined || server === '') throw new MeshError('INVALID_ARGUMENT', `kubeconfig ${cluster.at}.server: missing`);
  let url: URL;
  try {
    url = new URL(server);
  } catch {
    throw new MeshError('INVALID_ARGUMENT', `kubeconfig ${cluster.at}.server: "${server}" is not a URL`);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new MeshError('INVALID_ARGUMENT', `kubeconfig ${cluster.at}.server: "${server}" is neither https nor http`);
  if (cluster.fields['proxy-url'] !== undefined)
    throw new MeshError('INVALID_ARGUMENT', `kubeconfig ${cluster.at}.proxy-url: proxies are not supported`);
  const ca = bytes(cluster, 'certificate-authority-data', 'certificate-authority');
  const serverName = str(cluster, 'tls-server-name');
  const cert = user ? bytes(user, 'client-certificate-data', 'client-certificate') : undefined;
  const key = user ? bytes(user, 'client-key-data', 'client-key') : undefined;
  if ((cert === undefined) !== (key === undefined))
    throw new MeshError('INVALID_ARGUMENT', `kubeconfig ${user?.at ?? ''}: a client certificate needs both the certificate and its key`);
  const tls: KubeTls = {
    ...(ca !== undefined ? { ca } : {}),
    ...(cert !== undefined && key !== undefined ? { cert, key } : {}),
    insecureSkipTlsVerify: cluster.fields['insecure-skip-tls-verify'] === true,
    ...(serverName ? { serverName } : {}),
  };
  const namespace = str(context, 'namespace');
  return new KubeConfig(trimSlash(server), tls, user ? authOf(user) : { kind: 'none' }, namespace || undefined, name, file.origin);
}

function authOf(user: Entry): KubeAuth {
  if (user.fields['auth-provider'] !== undefined)
    throw new MeshError(
      'INVALID_ARGUMENT',
      `kubeconfig ${user.at}.auth-provider: auth providers are not supported (kubectl dropped them too); use an exec credential plugin`,
    );
  const token = str(user, 'token');
  if (token) return { kind: 'token', token };
  const tokenFile = str(user, 'tokenFile');
  if (tokenFile) return { kind: 'tokenFile', file: path.resolve(user.baseDir, tokenFile) };
  const username = str(user, 'username');
  if (username) return { kind: 'basic', username, password: str(user, 'password') ?? '' };
  const exec = user.fields.exec;
  if (exec !== undefined) return { kind: 'exec', exec: execPluginOf(exec, `${user.at}.exec`, user.baseDir) };
  return { kind: 'none' };
}

function execPluginOf(raw: unknown, at: string, baseDir: string): ExecPlugin {
  const e = (raw ?? {}) as Fields;
  if (typeof e.command !== 'string' || e.command === '') throw new MeshError('INVALID_ARGUMENT', `kubeconfig ${at}.command: missing`);
  const args = e.args ?? [];
  if (!Array.isArray(args) || args.some((a) => typeof a !== 'string'))
    throw new MeshError('INVALID_ARGUMENT', `kubeconfig ${at}.args: must be a list of strings`);
  const env: Record<string, string> = {};
  for (const [i, v] of ((e.env ?? []) as unknown[]).entries()) {
    const { name, value } = (v ?? {}) as Fields;
    if (typeof name !== 'string') throw new MeshError('INVALID_ARGUMENT', `kubeconfig ${at}.env[${i}].name: missing`);
    env[name] = typeof value === 'string' ? value : '';
  }
  // A command with a slash is a path relative to the kubeconfig (as client-go resolves it); a bare name is looked up on PATH.
  const command = e.command.includes('/') ? path.resolve(baseDir, e.command) : e.command;
  const apiVersion = typeof e.apiVersion === 'string' ? e.apiVersion : 'client.authentication.k8s.io/v1';
  return { command, args: args as string[], env, apiVersion, origin: at };
}

function str(e: Entry, key: string): string | undefined {
  const v = e.fields[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'string') throw new MeshError('INVALID_ARGUMENT', `kubeconfig ${e.at}.${key}: must be a string`);
  return v;
}

/** `<key>` as base64 data, or the file `<fileKey>` names (relative to its kubeconfig). */
function bytes(e: Entry, dataKey: string, fileKey: string): Buffer | undefined {
  const data = str(e, dataKey);
  if (data) return Buffer.from(data, 'base64');
  const file = str(e, fileKey);
  if (!file) return undefined;
  const abs = path.resolve(e.baseDir, file);
  try {
    return readFileSync(abs);
  } catch (err) {
    throw new MeshError('INVALID_ARGUMENT', `kubeconfig ${e.at}.${fileKey}: cannot read ${abs}: ${(err as Error).message}`);
  }
}

function trimSlash(url: string): string {
  return url.replace(/\/+$/, '');
}
