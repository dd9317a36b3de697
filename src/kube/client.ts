/**
 * A small Kubernetes REST client: JSON in, JSON out, over HTTP/1.1 keep-alive connections (one
 * agent per {@link KubeConfig}), with the verbs meshpilot uses — get, list (paged), create, update,
 * the four patch types, delete — and a streaming watch. Objects stay the JSON the server sent: no
 * model classes (client-node's typed APIs build an instance with a slot per schema field for every
 * object, and drop fields their models do not know, such as a CRD schema's
 * `x-kubernetes-int-or-string`), and no library of ~27 MiB loaded at run time.
 *
 * A refused call throws {@link KubeApiError} with the HTTP status and the Status reason and message
 * (what kubectl prints). 429 (the API server's rate limit, or "storage is (re)initializing" just
 * after a CRD is created) is retried after the Retry-After it names, as client-go does.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { errorCodeOfHttpStatus, errorMessage, MeshError } from '../util/errors.js';
import { Credentials } from './credentials.js';
import type { KubeJsonObject } from './kube-object.js';
import type { KubeConfig } from './kubeconfig.js';
import { ApiDiscovery, type ResourceInfo } from './discovery.js';

/** A refused call: the HTTP status, the Status reason (`NotFound`, `Conflict`, `Expired`…) and message. */
export class KubeApiError extends MeshError {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
    /** The Status object (or text) the server answered with. */
    readonly body: unknown = undefined,
  ) {
    super(errorCodeOfHttpStatus(status), message);
    this.name = 'KubeApiError';
  }
}

/** The HTTP status of a failed call, when it has one. */
export function statusCodeOf(err: unknown): number | undefined {
  if (err instanceof KubeApiError) return err.status;
  if (typeof err === 'object' && err !== null) {
    const e = err as { statusCode?: unknown; code?: unknown };
    if (typeof e.statusCode === 'number') return e.statusCode;
    if (typeof e.code === 'number') return e.code;
  }
  return undefined;
}

export type Query = Readonly<Record<string, string | number | boolean | undefined>>;

/** One page of a LIST. */
export interface ListPage<T> {
  readonly items: readonly T[];
  readonly metadata?: { readonly resourceVersion?: string; readonly continue?: string };
}

export interface ListOptions {
  readonly labelSelector?: string;
  readonly fieldSelector?: string;
  readonly limit?: number;
  readonly continueToken?: string;
}

/** Content types of PATCH: JSON merge patch, strategic merge patch, JSON Patch (RFC 6902), server-side apply. */
export const PATCH_TYPES = {
  merge: 'application/merge-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  json: 'application/json-patch+json',
  apply: 'application/apply-patch+yaml',
} as const;
export type PatchType = keyof typeof PATCH_TYPES;

/** A watch event's type: ADDED, MODIFIED, DELETED, BOOKMARK or ERROR (then the object is a Status). */
export type WatchEventHandler = (type: string, object: unknown) => void;

const REQUEST_TIMEOUT_MS = 30_000;
/** client-go's limit on 429 retries. */
const MAX_ATTEMPTS = 10;
/** A watch that sends nothing for this long is dead (the caller asks the server to end it sooner). */
const WATCH_IDLE_MS = 30_000;

interface Answer {
  readonly status: number;
  readonly text: string;
  readonly retryAfterSeconds?: number;
}

interface Send {
  readonly method: string;
  readonly path: string;
  readonly query?: Query | undefined;
  readonly body?: unknown;
  readonly contentType?: string | undefined;
  readonly timeoutMs?: number | undefined;
}

const clients = new WeakMap<KubeConfig, KubeClient>();

/** The client of a config: one per config, so every caller shares its connections. */
export function kubeClient(kc: KubeConfig): KubeClient {
  let c = clients.get(kc);
  if (!c) clients.set(kc, (c = new KubeClient(kc)));
  return c;
}

export class KubeClient {
  readonly #agent: HttpAgent;
  readonly #credentials: Credentials;
  readonly #discovery = new ApiDiscovery((path) => this.get(path));

  constructor(readonly config: KubeConfig) {
    const { tls } = config;
    this.#agent = config.server.startsWith('http:')
      ? new HttpAgent({ keepAlive: true })
      : new HttpsAgent({
          keepAlive: true,
          ...(tls.ca !== undefined ? { ca: tls.ca } : {}),
          ...(tls.cert !== undefined ? { cert: tls.cert, key: tls.key } : {}),
          rejectUnauthorized: !tls.insecureSkipTlsVerify,
          ...(tls.serverName !== undefined ? { servername: tls.serverName } : {}),
        });
    this.#credentials = new Credentials(config.auth);
  }

  /** One call with a JSON body (or none); the answer's JSON. KubeApiError for a non-2xx answer. */
  async call(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<KubeJsonObject> {
    return this.#json({ method, path, body, contentType });
  }

  get<T = KubeJsonObject>(path: string, query?: Query): Promise<T> {
    return this.#json({ method: 'GET', path, query });
  }

  /** GET that answers undefined for 404. */
  async getOrUndefined<T = KubeJsonObject>(path: string): Promise<T | undefined> {
    try {
      return await this.get<T>(path);
    } catch (err) {
      if (statusCodeOf(err) === 404) return undefined;
      throw err;
    }
  }

  /** One page of a collection (`path` may carry its own query, e.g. a fieldSelector). */
  list<T = KubeJsonObject>(path: string, opts: ListOptions = {}): Promise<ListPage<T>> {
    const query: Query = {
      labelSelector: opts.labelSelector,
      fieldSelector: opts.fieldSelector,
      limit: opts.limit,
      continue: opts.continueToken,
    };
    return this.#json({ method: 'GET', path, query, timeoutMs: 60_000 });
  }

  /** Every item of a collection, page after page. */
  async listAll<T = KubeJsonObject>(path: string, opts: Omit<ListOptions, 'continueToken'> = {}): Promise<T[]> {
    const items: T[] = [];
    let token: string | undefined;
    do {
      const page: ListPage<T> = await this.list<T>(path, { limit: 500, ...opts, ...(token !== undefined ? { continueToken: token } : {}) });
      items.push(...page.items);
      token = page.metadata?.continue || undefined;
    } while (token !== undefined);
    return items;
  }

  create<T = KubeJsonObject>(path: string, body: unknown, query?: Query): Promise<T> {
    return this.#json({ method: 'POST', path, query, body });
  }

  /** PUT: replaces the object (guarded by the resourceVersion the body names, if any). */
  update<T = KubeJsonObject>(path: string, body: unknown, query?: Query): Promise<T> {
    return this.#json({ method: 'PUT', path, query, body });
  }

  /** PATCH of `type`; a server-side apply names its field manager in `query` (`fieldManager`, `force`). */
  patch<T = KubeJsonObject>(path: string, type: PatchType, body: unknown, query?: Query): Promise<T> {
    return this.#json({ method: 'PATCH', path, query, body, contentType: PATCH_TYPES[type] });
  }

  delete<T = KubeJsonObject>(path: string, body?: unknown, query?: Query): Promise<T> {
    return this.#json({ method: 'DELETE', path, query, body });
  }

  /** The resources one group/version serves (cached; `refresh` asks again, e.g. after CRDs were created). */
  resources(apiVersion: string, refresh = false): Promise<ResourceInfo[]> {
    return this.#discovery.resources(apiVersion, refresh);
  }

  /** Where `kind` of `apiVersion` is served, or undefined when the server does not know it (yet). */
  resolve(apiVersion: string, kind: string): Promise<ResourceInfo | undefined> {
    return this.#discovery.resolve(apiVersion, kind);
  }

  /**
   * A WATCH of `path` from `query.resourceVersion`: each event (newline-delimited JSON) goes to
   * `onEvent` as it arrives. Resolves when the server ends the stream or `signal` aborts; rejects
   * with KubeApiError when the server refuses the watch (410 Gone for a compacted resourceVersion,
   * 403…), or with an error named TimeoutError when the stream stayed silent for 30 s.
   */
  async watch(path: string, query: Query, onEvent: WatchEventHandler, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return;
    const res = await this.#open({ method: 'GET', path, query: { ...query, watch: true } }, signal, WATCH_IDLE_MS, true);
    if (res === undefined) return; // aborted
    if (res.statusCode !== 200) {
      // A rotated token: the reflector's next watch (after its backoff) asks for it again.
      if (res.statusCode === 401) this.#credentials.invalidate();
      throw this.#error('GET', path, { status: res.statusCode ?? 0, text: await readText(res) });
    }
    await new Promise<void>((resolve, reject) => {
      let rest = '';
      let failed = false;
      const fail = (err: Error): void => {
        failed = true;
        clearTimeout(idle);
        res.destroy();
        reject(err);
      };
      const idle = setTimeout(() => {
        const err = new MeshError('DEADLINE_EXCEEDED', `WATCH ${path}: silent for ${WATCH_IDLE_MS / 1000} s`);
        err.name = 'TimeoutError';
        fail(err);
      }, WATCH_IDLE_MS);
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (failed) return;
        idle.refresh();
        if (!chunk.includes('\n')) {
          rest += chunk; // part of a large object
          return;
        }
        const lines = (rest + chunk).split('\n');
        rest = lines.pop() ?? '';
        for (const line of lines) {
          if (line.trim() === '') continue;
          let event: { type?: unknown; object?: unknown };
          try {
            event = JSON.parse(line) as typeof event;
          } catch {
            fail(new MeshError('INTERNAL', `WATCH ${path}: a line that is not JSON: ${line.slice(0, 200)}`));
            return;
          }
          onEvent(String(event.type), event.object);
        }
      });
      const done = (): void => {
        clearTimeout(idle);
        resolve();
      };
      res.on('end', done);
      res.on('close', () => (failed ? undefined : signal?.aborted || res.complete ? done() : fail(connectionLost(path))));
      res.on('error', (err) => (failed ? undefined : signal?.aborted ? done() : fail(err)));
    });
  }

  async #json<T>(req: Send): Promise<T> {
    let reauthenticated = false;
    for (let attempt = 1; ; attempt++) {
      const res = await this.#send(req);
      if (res.status === 429 && attempt < MAX_ATTEMPTS) {
        await new Promise((r) => setTimeout(r, Math.min(res.retryAfterSeconds ?? 1, 10) * 1000));
        continue;
      }
      // A rotated token file or an expired plugin token: fetch it again once.
      if (res.status === 401 && !reauthenticated && this.#credentials.invalidate()) {
        reauthenticated = true;
        continue;
      }
      if (res.status < 200 || res.status >= 300) throw this.#error(req.method, req.path, res);
      if (res.text === '') return {} as T;
      try {
        return JSON.parse(res.text) as T;
      } catch {
        throw new MeshError(
          'INTERNAL',
          `${req.method} ${req.path}: the API server answered HTTP ${res.status} with a body that is not JSON`,
        );
      }
    }
  }

  #error(method: string, path: string, res: Answer): KubeApiError {
    let status: { message?: unknown; reason?: unknown } | undefined;
    try {
      status = JSON.parse(res.text) as typeof status;
    } catch {
      // not a Status object: the text as it came
    }
    const message = typeof status?.message === 'string' ? status.message : res.text.trim() || `${method} ${path}: HTTP ${res.status}`;
    return new KubeApiError(res.status, typeof status?.reason === 'string' ? status.reason : '', message, status ?? res.text);
  }

  async #send(req: Send): Promise<Answer> {
    const res = await this.#open(req, undefined, req.timeoutMs ?? REQUEST_TIMEOUT_MS, false);
    if (res === undefined) throw new MeshError('ABORTED', `${req.method} ${req.path}: aborted`);
    const text = await readText(res);
    const retryAfter = Number(res.headers['retry-after']);
    return {
      status: res.statusCode ?? 0,
      text,
      ...(Number.isFinite(retryAfter) && retryAfter > 0 ? { retryAfterSeconds: retryAfter } : {}),
    };
  }

  /** Sends the request and resolves with the response head; undefined when `signal` aborted first. */
  async #open(
    req: Send,
    signal: AbortSignal | undefined,
    timeoutMs: number,
    stream: boolean,
    retried = false,
  ): Promise<IncomingMessage | undefined> {
    const url = new URL(this.config.server + req.path);
    for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { accept: 'application/json' };
    const authorization = await this.#credentials.authorization();
    if (authorization !== undefined) headers.authorization = authorization;
    const payload = req.body === undefined ? undefined : JSON.stringify(req.body);
    if (payload !== undefined) {
      headers['content-type'] = req.contentType ?? 'application/json';
      headers['content-length'] = String(Buffer.byteLength(payload));
    }
    const send = url.protocol === 'http:' ? httpRequest : httpsRequest;
    return new Promise<IncomingMessage | undefined>((resolve, reject) => {
      const what = `${req.method} ${url.pathname}`;
      // A plain call must be answered in full within timeoutMs; a watch only has to start within it (then it watches itself).
      const deadline = setTimeout(
        () => r.destroy(new MeshError('DEADLINE_EXCEEDED', `${what}: no answer within ${timeoutMs / 1000} s`)),
        timeoutMs,
      );
      const r = send(url, { method: req.method, headers, agent: this.#agent }, (res) => {
        if (stream) clearTimeout(deadline);
        resolve(res);
      });
      r.on('close', () => clearTimeout(deadline));
      const onAbort = (): void => {
        r.destroy();
        resolve(undefined);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      r.on('close', () => signal?.removeEventListener('abort', onAbort));
      let answered = false;
      r.on('response', () => (answered = true));
      r.on('error', (err) => {
        // Aborted: already answered with undefined; the error is the destroy's (a resend would go unheard).
        if (signal?.aborted) return;
        // The keep-alive race: the server closed an idle connection as this request went out on it.
        // Nothing was answered, so the request is sent again on a fresh connection (as Go's transport does).
        const code = (err as { code?: unknown }).code;
        if (r.reusedSocket && !answered && !retried && (code === 'ECONNRESET' || code === 'EPIPE')) {
          resolve(this.#open(req, signal, timeoutMs, stream, true));
          return;
        }
        reject(err instanceof MeshError ? err : new MeshError('UNAVAILABLE', `${what}: ${errorMessage(err)}`, { cause: err }));
      });
      r.end(payload);
    });
  }
}

function readText(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    res.setEncoding('utf8');
    res.on('data', (c: string) => (text += c));
    res.on('end', () => resolve(text));
    res.on('error', reject);
    res.on('close', () =>
      res.complete ? resolve(text) : reject(new MeshError('UNAVAILABLE', 'the connection closed before the answer was complete')),
    );
  });
}

function connectionLost(path: string): MeshError {
  return new MeshError('UNAVAILABLE', `WATCH ${path}: the connection closed mid-stream`);
}
