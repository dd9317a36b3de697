/**
 * List + watch of one Kubernetes resource (client-go's Reflector, on the watch stream of
 * src/kube's client): a paged LIST, then a WATCH from the list's resourceVersion with bookmarks. The
 * resourceVersion moves with every event and bookmark, so a watch that ends (server timeout, the
 * client's 30 s inactivity timeout, a broken connection) resumes where it stopped and misses
 * nothing. When the server no longer has that resourceVersion (410 Gone / Expired, or "too large"
 * after talking to a different etcd) the reflector lists again and hands over the net difference
 * against what it had: objects missing from the new list become deletes, objects whose
 * resourceVersion did not move raise nothing. Connection errors retry with exponential backoff.
 *
 * Why not client-node's ListWatch: it stops for good on the first error, has no bookmarks, no
 * "synced" signal, and treats "too large resource version" as a plain error.
 *
 * Changes reach `onBatch` batched: the whole difference of a (re)list at once, watch events
 * gathered until the event loop is idle (one batch per burst the server sends).
 */
import { kubeClient, statusCodeOf, type KubeConfig, type ListPage } from '../../../kube/index.js';
import { errorMessage } from '../../../util/errors.js';
import type { Logger } from '../../../util/log.js';
import { Backoff, type BackoffOptions } from './backoff.js';
import type { KubeObject } from './kube-object.js';

export type { ListPage };
export { statusCodeOf };

export type ListFn<T> = (page: { readonly limit: number; readonly continueToken?: string }) => Promise<ListPage<T>>;

/** Where a resource is listed and watched; several targets are tried in order while the server answers 404. */
export interface ReflectorTarget<T> {
  /**
   * List and watch path, e.g. `/api/v1/services` or `/apis/networking.istio.io/v1/virtualservices`;
   * it may carry a query (`?labelSelector=…`), which both the LIST and the WATCH send.
   */
  readonly path: string;
  /** How to list instead of a GET of `path` (tests plant failures here). */
  readonly list?: ListFn<T>;
}

export type ReflectorEvent<T> =
  | { readonly type: 'add'; readonly object: T }
  | { readonly type: 'update'; readonly object: T; readonly old: T }
  | { readonly type: 'delete'; readonly object: T };

export interface ReflectorOptions<T> {
  /** For logs, e.g. `virtualservices.networking.istio.io`. */
  readonly name: string;
  readonly kubeConfig: KubeConfig;
  readonly targets: readonly ReflectorTarget<T>[];
  readonly logger: Logger;
  readonly onBatch: (events: readonly ReflectorEvent<T>[]) => void;
  readonly backoff?: BackoffOptions;
  /** LIST page size (default 500, as client-go). */
  readonly pageSize?: number;
  /**
   * Applied to every object before it is cached or handed over (client-go's SetTransform): keeps
   * only what the consumer reads. Default {@link stripManagedFields}. It may change the object it is
   * given (each one is fresh from the wire) and must keep metadata name, namespace and resourceVersion.
   */
  readonly transform?: (object: T) => T;
}

/**
 * The default transform, as istiod's informers do: managedFields (often the largest part of an
 * object) are never read. Safe for objects written back with a PUT: a missing managedFields
 * leaves the server's unchanged.
 */
export function stripManagedFields<T extends KubeObject>(object: T): T {
  const metadata = object.metadata as { managedFields?: unknown } | undefined;
  if (metadata !== undefined && 'managedFields' in metadata) delete metadata.managedFields;
  return object;
}

export interface ReflectorStats {
  /** Successful LISTs (the first one included). */
  readonly lists: number;
  /** WATCH requests made. */
  readonly watches: number;
  /** Watches the server ended with 410 Gone / Expired (or too large a resourceVersion): each forces a relist. */
  readonly expired: number;
  /** Failed LISTs and watches that ended with an error. */
  readonly errors: number;
}

interface WatchEnd {
  readonly err: unknown;
  readonly expired: boolean;
  readonly events: number;
  readonly ms: number;
}

/**
 * Server-side watch timeout. The client ends a stream after 30 s without data, so the server is
 * asked to end it first: it sends a bookmark 2 s before its deadline, which keeps the
 * resourceVersion of a quiet resource current (no needless 410 and relist later). Spread so the
 * watches of one process do not all reconnect at the same moment.
 */
function watchTimeoutSeconds(): number {
  return 20 + Math.floor(Math.random() * 8);
}

/** A watch that ended this quickly without any event is a failure, not a normal close: back off. */
const HEALTHY_WATCH_MS = 5_000;

export function objectKey(o: KubeObject): string {
  return `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
}

const rvOf = (o: KubeObject): string => o.metadata?.resourceVersion ?? '';

/** A watch ERROR status that means "list again": 410 Gone/Expired, or a resourceVersion this server never had. */
function needsRelist(status: unknown): boolean {
  if (typeof status !== 'object' || status === null) return false;
  const s = status as { code?: unknown; reason?: unknown; details?: { causes?: { reason?: unknown }[] } };
  if (s.code === 410 || s.reason === 'Expired' || s.reason === 'Gone') return true;
  return (s.details?.causes ?? []).some((c) => c.reason === 'ResourceVersionTooLarge');
}

export class Reflector<T extends KubeObject> {
  readonly #opts: ReflectorOptions<T>;
  readonly #log: Logger;
  #cache = new Map<string, T>();
  #rv = '';
  #target = 0;
  /** 404s from LIST in the current round over the targets. */
  #notFound = 0;
  #preferredRetried = false;
  #started = false;
  #stopped = false;
  #synced = false;
  #markSynced!: () => void;
  readonly #syncedPromise = new Promise<void>((r) => (this.#markSynced = r));
  #signalStop!: () => void;
  readonly #stopSignal = new Promise<void>((r) => (this.#signalStop = r));
  #watch: AbortController | undefined;
  #pending: ReflectorEvent<T>[] = [];
  #flushTimer: NodeJS.Immediate | undefined;
  #loop: Promise<void> | undefined;
  #failing = false;
  readonly #stats = { lists: 0, watches: 0, expired: 0, errors: 0 };

  readonly #transform: (object: T) => T;

  constructor(opts: ReflectorOptions<T>) {
    if (opts.targets.length === 0) throw new Error(`reflector ${opts.name}: no targets`);
    this.#opts = opts;
    this.#log = opts.logger;
    this.#transform = opts.transform ?? stripManagedFields;
  }

  /** Starts listing and watching; resolves once the first LIST was handed over (or the resource is not served, or on stop). */
  start(): Promise<void> {
    if (this.#started) throw new Error(`reflector ${this.#opts.name} started twice`);
    this.#started = true;
    this.#loop = this.#run().catch((err: unknown) => {
      this.#log.error('reflector loop failed', { resource: this.#opts.name, error: errorMessage(err) });
    });
    return this.#syncedPromise;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#signalStop();
    this.#watch?.abort();
    if (this.#flushTimer) clearImmediate(this.#flushTimer);
    this.#pending = [];
    this.#markSynced();
    await this.#loop;
  }

  get synced(): boolean {
    return this.#synced;
  }

  /** The watch path in use (the first target the server serves). */
  get path(): string {
    return this.#opts.targets[this.#target]?.path ?? '';
  }

  stats(): ReflectorStats {
    return { ...this.#stats };
  }

  /** Every object as last seen, in no particular order. */
  list(): readonly T[] {
    return [...this.#cache.values()];
  }

  get(namespace: string, name: string): T | undefined {
    return this.#cache.get(`${namespace}/${name}`);
  }

  async #run(): Promise<void> {
    const backoff = new Backoff(this.#opts.backoff);
    let delay = 0;
    while (!this.#stopped) {
      if (delay > 0) await this.#sleep(delay);
      if (this.#stopped) return;
      delay = 0;
      if (this.#rv === '') {
        const listed = await this.#relist().then(
          (done) => ({ done, err: undefined }),
          (e: unknown) => ({ done: false, err: e ?? new Error('list failed') }),
        );
        if (this.#stopped) return;
        if (listed.err !== undefined) delay = this.#listFailed(listed.err, backoff);
        if (!listed.done) continue;
        backoff.reset();
      }
      const end = await this.#watchOnce();
      if (this.#stopped) return;
      if (end.expired) {
        this.#stats.expired++;
        this.#log.info('watch expired; listing again', { resource: this.#opts.name, resourceVersion: this.#rv });
        this.#rv = '';
        continue;
      }
      const normal = end.err === undefined || end.err === null || (end.err instanceof Error && end.err.name === 'TimeoutError');
      if (normal && (end.events > 0 || end.ms >= HEALTHY_WATCH_MS)) {
        backoff.reset();
        this.#recovered();
        continue;
      }
      delay = backoff.next();
      if (!normal) this.#failed('watch failed', end.err, delay);
      if (statusCodeOf(end.err) === 404) this.#rv = ''; // the version went away: list (and pick a target) again
    }
  }

  /** Lists every page, then hands over the difference against the cache as one batch; false: list again. */
  async #relist(): Promise<boolean> {
    const target = this.#opts.targets[this.#target];
    if (!target) throw new Error('no target');
    const items: T[] = [];
    let page: ListPage<T> | undefined;
    let token: string | undefined;
    const list: ListFn<T> = target.list ?? ((p) => kubeClient(this.#opts.kubeConfig).list<T>(target.path, p));
    do {
      page = await list({ limit: this.#opts.pageSize ?? 500, ...(token !== undefined ? { continueToken: token } : {}) });
      if (this.#stopped) return false;
      for (const item of page.items) items.push(this.#transform(item));
      const next = page.metadata?.continue;
      token = next !== undefined && next !== '' ? next : undefined;
    } while (token !== undefined);
    const rv = page.metadata?.resourceVersion ?? '';
    if (this.#target > 0 && this.#notFound > 0 && !this.#preferredRetried) {
      // The resource appeared while the targets were tried one after another (a CRD being
      // installed): go back once to the preferred version, which is most likely served now too.
      this.#preferredRetried = true;
      this.#target = 0;
      this.#notFound = 0;
      return false;
    }

    const next = new Map<string, T>();
    for (const item of items) next.set(objectKey(item), item);
    const events: ReflectorEvent<T>[] = [];
    for (const [key, object] of next) {
      const old = this.#cache.get(key);
      if (!old) events.push({ type: 'add', object });
      else if (rvOf(old) !== rvOf(object) || rvOf(object) === '') events.push({ type: 'update', object, old });
    }
    for (const [key, object] of this.#cache) if (!next.has(key)) events.push({ type: 'delete', object });
    this.#cache = next;
    this.#rv = rv;
    this.#notFound = 0;
    this.#stats.lists++;
    this.#recovered();
    this.#emit(events, true);
    this.#setSynced();
    return true;
  }

  /** Decides the delay after a failed LIST; a 404 tries the next target first. */
  #listFailed(err: unknown, backoff: Backoff): number {
    if (statusCodeOf(err) === 404) {
      this.#stats.errors++;
      this.#notFound++;
      if (this.#notFound < this.#opts.targets.length) {
        this.#target++;
        return 0;
      }
      // Not served at any version (CRD not installed): empty until it appears; the next try starts
      // again from the first (preferred) target.
      this.#target = 0;
      this.#notFound = 0;
      const delay = backoff.next();
      if (!this.#synced)
        this.#log.warn('resource not served by the API server; treating it as empty and retrying', {
          resource: this.#opts.name,
          retryInMs: delay,
        });
      this.#setSynced();
      return delay;
    }
    const delay = backoff.next();
    this.#failed('list failed', err, delay);
    return delay;
  }

  #watchOnce(): Promise<WatchEnd> {
    const target = this.#opts.targets[this.#target];
    if (!target) return Promise.resolve({ err: new Error('no target'), expired: false, events: 0, ms: 0 });
    this.#stats.watches++;
    this.#log.debug('watch', { resource: this.#opts.name, path: target.path, resourceVersion: this.#rv });
    const started = Date.now();
    let live = true;
    let events = 0;
    let expired = false;
    const ended = new Promise<WatchEnd>((resolve) => {
      const finish = (err: unknown): void => {
        if (!live) return;
        live = false;
        this.#watch = undefined;
        // A watch from a resourceVersion the server never had (another etcd) fails with 504 "too large".
        const status = statusCodeOf(err);
        resolve({ err, expired: expired || status === 410 || status === 504, events, ms: Date.now() - started });
      };
      const onEvent = (type: string, obj: unknown): void => {
        if (!live || this.#stopped) return;
        events++;
        if (type === 'ERROR') {
          if (needsRelist(obj)) expired = true;
          else this.#log.warn('watch error event', { resource: this.#opts.name, status: obj });
          return;
        }
        const o = type === 'BOOKMARK' ? (obj as T) : this.#transform(obj as T);
        if (type === 'ADDED' || type === 'MODIFIED') this.#upsert(o);
        else if (type === 'DELETED') this.#delete(o);
        if (rvOf(o) !== '') this.#rv = rvOf(o); // BOOKMARK carries only this
      };
      const ctrl = new AbortController();
      this.#watch = ctrl;
      if (this.#stopped) ctrl.abort();
      kubeClient(this.#opts.kubeConfig)
        .watch(
          target.path,
          { resourceVersion: this.#rv, allowWatchBookmarks: true, timeoutSeconds: watchTimeoutSeconds() },
          onEvent,
          ctrl.signal,
        )
        .then(() => finish(undefined), finish);
    });
    return Promise.race([ended, this.#stopSignal.then(() => ({ err: undefined, expired: false, events, ms: 0 }))]);
  }

  #upsert(object: T): void {
    const key = objectKey(object);
    const old = this.#cache.get(key);
    if (old && rvOf(old) === rvOf(object) && rvOf(object) !== '') return; // seen already (replayed)
    this.#cache.set(key, object);
    this.#emit([old ? { type: 'update', object, old } : { type: 'add', object }], false);
  }

  #delete(object: T): void {
    const key = objectKey(object);
    const old = this.#cache.get(key);
    if (!old) return;
    this.#cache.delete(key);
    this.#emit([{ type: 'delete', object: old }], false);
  }

  #emit(events: readonly ReflectorEvent<T>[], now: boolean): void {
    if (this.#stopped) return;
    this.#pending.push(...events);
    if (now) this.#flush();
    else this.#flushTimer ??= setImmediate(() => this.#flush());
  }

  #flush(): void {
    if (this.#flushTimer) clearImmediate(this.#flushTimer);
    this.#flushTimer = undefined;
    const batch = this.#pending;
    this.#pending = [];
    if (batch.length === 0 || this.#stopped) return;
    try {
      this.#opts.onBatch(batch);
    } catch (err) {
      this.#log.error('reflector consumer failed', { resource: this.#opts.name, events: batch.length, error: errorMessage(err) });
    }
  }

  #setSynced(): void {
    if (this.#synced) return;
    this.#synced = true;
    this.#markSynced();
  }

  #failed(what: string, err: unknown, retryInMs: number): void {
    this.#stats.errors++;
    const fields = { resource: this.#opts.name, error: describe(err), status: statusCodeOf(err), retryInMs };
    // RBAC refusals do not heal by retrying: say which permission is missing, at error level.
    if (fields.status === 403 && !this.#failing)
      this.#log.error(`${what}: forbidden — meshpilot's service account needs list and watch on ${this.#opts.name} (see manifests/rbac)`, {
        ...fields,
        path: this.path,
      });
    else if (this.#failing) this.#log.debug(what, fields);
    else this.#log.warn(what, fields);
    this.#failing = true;
  }

  #recovered(): void {
    if (!this.#failing) return;
    this.#failing = false;
    this.#log.info('watch re-established', { resource: this.#opts.name, resourceVersion: this.#rv });
  }

  #sleep(ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const slept = new Promise<void>((r) => (timer = setTimeout(r, ms)));
    return Promise.race([slept, this.#stopSignal]).finally(() => clearTimeout(timer));
  }
}

/** Error text including its `cause` (ECONNREFUSED and the like hide there). */
function describe(err: unknown): string {
  const msg = errorMessage(err);
  const cause = err instanceof Error ? err.cause : undefined;
  return cause !== undefined ? `${msg}: ${errorMessage(cause)}` : msg;
}

/**
 * Starts `reflectors` and waits until every one has synced or `signal` aborts. An abort stops them
 * (which ends the wait: a resource that is not served yet, or an unreachable server, never syncs),
 * so a controller's task returns promptly when it stops leading.
 */
export async function startUntilAborted(
  reflectors: ReadonlyArray<{ start(): Promise<void>; stop(): Promise<void> }>,
  signal: AbortSignal,
): Promise<void> {
  const onAbort = (): void => void Promise.all(reflectors.map((r) => r.stop()));
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    await Promise.all(reflectors.map((r) => r.start()));
  } finally {
    signal.removeEventListener('abort', onAbort);
  }
}
