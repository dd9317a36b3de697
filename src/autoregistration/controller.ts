/**
 * WorkloadEntry auto-registration and health (istiod's pilot/pkg/autoregistration): a proxy
 * connecting with node metadata AUTO_REGISTER_GROUP gets a WorkloadEntry made from that
 * WorkloadGroup, marked as connected to this control-plane instance; when its last connection
 * ends the entry is marked disconnected and removed after the grace period
 * (PILOT_WORKLOAD_ENTRY_GRACE_PERIOD) unless the proxy came back. A proxy with WORKLOAD_ENTRY
 * stands for an existing, health-checked entry instead. Health reports (HealthInformation
 * requests) become the entry's `Healthy` condition.
 *
 * As in istiod, every instance runs this for the proxies connected to it (it is not leader-only):
 * the `istio.io/workloadController` annotation says which instance owns an entry, and only the
 * owner marks it disconnected or writes its health, so a proxy that moved to another instance
 * keeps its entry. Work on one entry is serialised here; writes re-read the entry and re-check, as
 * istiod's optimistic updates do.
 */
import type { Config } from '../config/index.js';
import {
  AUTO_REGISTRATION_GROUP_ANNOTATION,
  CONNECTED_AT_ANNOTATION,
  DISCONNECTED_AT_ANNOTATION,
  HEALTH_CHECKS_ENABLED_ANNOTATION,
  HEALTHY_CONDITION,
  WORKLOAD_CONTROLLER_ANNOTATION,
} from '../config/constants.js';
import type { IstioCondition } from '../config/index.js';
import type { Proxy } from '../model/index.js';
import { realClock, type Clock, type TimerHandle } from '../util/clock.js';
import { errorMessage, MeshError } from '../util/errors.js';
import type { Logger } from '../util/log.js';
import { AdsConnections, type ProxyKey } from './connections.js';
import { autoRegisteredEntryName, entryFromGroup, registrationMetadata, type RegistrationMetadata } from './entry-from-group.js';
import { formatTime, parseTime, withRetries, type EntryObject, type WorkloadEntryStore } from './entry-store.js';

/** One ADS stream of a proxy. */
export interface WorkloadConnection {
  readonly id: string;
  readonly proxy: Proxy;
  /** When the stream was accepted, ms since the epoch. */
  readonly connectedAt: number;
}

/** Who the stream authenticated as (its SPIFFE identity), when it did. */
export interface VerifiedIdentity {
  readonly namespace: string;
  readonly serviceAccount: string;
}

export interface WorkloadEntryControllerOptions {
  /** This instance's name in `istio.io/workloadController` (istiod: its pod name). */
  readonly instanceId: string;
  readonly store: WorkloadEntryStore;
  /** The WorkloadGroup of that namespace and name in the current config. */
  readonly group: (namespace: string, name: string) => Config<'WorkloadGroup'> | undefined;
  /** PILOT_WORKLOAD_ENTRY_GRACE_PERIOD (10 s). */
  readonly gracePeriodMs: number;
  /** The server's max connection age: an entry connected longer than 1.5× it is treated as leaked. Default: none. */
  readonly maxConnectionAgeMs?: number;
  /** PILOT_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION (true). */
  readonly autoRegistration?: boolean;
  /** PILOT_ENABLE_WORKLOAD_ENTRY_HEALTHCHECKS (true). */
  readonly healthChecks?: boolean;
  /** ISTIO_WORKLOAD_ENTRY_VALIDATE_IDENTITY (true): the stream's identity must be the entry's namespace and service account. */
  readonly validateIdentity?: boolean;
  readonly identity?: (proxy: Proxy) => VerifiedIdentity | undefined;
  readonly clock?: Clock;
  readonly logger: Logger;
}

/** Counters of what the controller did (istiod's auto_registration_* metrics). */
export interface AutoRegistrationStats {
  registrations: number;
  updates: number;
  unregistrations: number;
  deletes: number;
  errors: number;
}

interface Target {
  readonly namespace: string;
  readonly name: string;
  readonly auto: boolean;
  readonly key: ProxyKey;
  readonly md: RegistrationMetadata;
}

const isAutoRegistered = (e: EntryObject): boolean => (e.annotations[AUTO_REGISTRATION_GROUP_ANNOTATION] ?? '') !== '';
const isHealthChecked = (e: EntryObject): boolean => (e.annotations[WORKLOAD_CONTROLLER_ANNOTATION] ?? '') !== '' && !isAutoRegistered(e);
const hasHealthCondition = (e: EntryObject): boolean => e.conditions.some((c) => c.type === HEALTHY_CONDITION);

function withConnectMeta(e: EntryObject, controller: string, at: number): EntryObject {
  const { [DISCONNECTED_AT_ANNOTATION]: _gone, ...rest } = e.annotations;
  return { ...e, annotations: { ...rest, [WORKLOAD_CONTROLLER_ANNOTATION]: controller, [CONNECTED_AT_ANNOTATION]: formatTime(at) } };
}

export class WorkloadEntryController {
  readonly #o: WorkloadEntryControllerOptions;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #maxConnectionAgeMs: number;
  readonly #conns = new AdsConnections<WorkloadConnection>();
  readonly #targets = new Map<string, Target>();
  /** Per entry (`namespace/name`): the tail of its work, so one entry's steps run in order. */
  readonly #tails = new Map<string, Promise<void>>();
  readonly #timers = new Set<TimerHandle>();
  #stopped = false;
  readonly stats: AutoRegistrationStats = { registrations: 0, updates: 0, unregistrations: 0, deletes: 0, errors: 0 };

  constructor(opts: WorkloadEntryControllerOptions) {
    this.#o = opts;
    this.#clock = opts.clock ?? realClock;
    this.#log = opts.logger;
    const age = opts.maxConnectionAgeMs;
    // istiod: half as long again as the max connection age, so a live proxy has reconnected by then.
    this.#maxConnectionAgeMs = age === undefined || age <= 0 || !Number.isFinite(age) ? Infinity : age * 1.5;
  }

  /** Starts the periodic sweep of entries whose proxies went away unnoticed (every 10 grace periods). */
  start(): void {
    const every = 10 * this.#o.gracePeriodMs;
    const tick = (): void => {
      this.#timers.delete(handle);
      if (this.#stopped) return;
      void this.sweep().finally(() => {
        if (!this.#stopped) this.#timers.add((handle = this.#clock.setTimeout(tick, every)));
      });
    };
    let handle = this.#clock.setTimeout(tick, every);
    this.#timers.add(handle);
  }

  stop(): void {
    this.#stopped = true;
    for (const t of this.#timers) this.#clock.clearTimeout(t);
    this.#timers.clear();
  }

  /** Resolves when every queued step has run (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.#tails.size > 0) await Promise.all([...this.#tails.values()]);
  }

  /**
   * A stream's proxy connected. Rejects (and the stream should be refused, as istiod does) when its
   * entry cannot be registered: no WorkloadGroup, an identity that may not act for the entry.
   */
  async onConnect(conn: WorkloadConnection): Promise<void> {
    const target = await this.#targetFor(conn.proxy);
    if (!target) return;
    this.#targets.set(conn.id, target);
    this.#conns.connect(target.key, conn.id, conn);
    try {
      await this.#serial(target, () => (target.auto ? this.#register(target, conn) : this.#becomeController(target, conn)));
    } catch (err) {
      this.#targets.delete(conn.id);
      this.#conns.disconnect(target.key, conn.id);
      throw err;
    }
  }

  /** A stream ended: once the proxy has no stream left, its entry is marked disconnected and its cleanup scheduled. */
  onDisconnect(conn: WorkloadConnection): void {
    const target = this.#targets.get(conn.id);
    if (!target) return;
    this.#targets.delete(conn.id);
    if (this.#conns.disconnect(target.key, conn.id)) return;
    const disconnectedAt = Math.floor(this.#clock.now());
    const connectedAt = Math.floor(conn.connectedAt);
    void this.#serial(target, async () => {
      const changed = await withRetries(() => this.#markDisconnected(target, disconnectedAt, connectedAt), this.#sleep).catch(
        (err: unknown) => {
          this.stats.errors++;
          this.#log.warn('cannot mark WorkloadEntry disconnected', {
            entry: `${target.namespace}/${target.name}`,
            error: errorMessage(err),
          });
          return false;
        },
      );
      if (!changed) return;
      if (target.auto) this.stats.unregistrations++;
      this.#log.info('WorkloadEntry marked disconnected', { entry: `${target.namespace}/${target.name}`, auto: target.auto });
      this.#after(this.#o.gracePeriodMs, () =>
        this.#serial(target, async () => {
          const current = await this.#o.store.get(target.namespace, target.name);
          if (current && this.shouldCleanup(current)) await this.#cleanup(current, false);
        }),
      );
    });
  }

  /** A health report of the proxy's readiness probe (HealthInformation: no error detail = healthy). */
  onHealth(conn: WorkloadConnection, healthy: boolean, message: string): void {
    if (this.#o.healthChecks === false) return;
    const target = this.#targets.get(conn.id);
    if (!target) {
      this.#log.warn('health report from a proxy without a WorkloadEntry ignored', { proxy: conn.proxy.id });
      return;
    }
    const now = Math.floor(this.#clock.now());
    // The agent reports transitions only, so the probe time is the transition time too.
    const condition: IstioCondition = {
      type: HEALTHY_CONDITION,
      status: healthy ? 'True' : 'False',
      lastProbeTime: formatTime(now),
      lastTransitionTime: formatTime(now),
      ...(healthy ? {} : { message }),
    };
    void this.#serial(target, async () => {
      await withRetries(
        () =>
          this.#o.store.update(target.namespace, target.name, (cur) => {
            // The proxy reconnected to another instance, which writes its health now.
            if (cur.annotations[WORKLOAD_CONTROLLER_ANNOTATION] !== this.#o.instanceId) return undefined;
            const prev = cur.conditions.find((c) => c.type === HEALTHY_CONDITION);
            if ((parseTime(prev?.lastProbeTime) ?? -Infinity) > now) return undefined;
            return { ...cur, conditions: [...cur.conditions.filter((c) => c.type !== HEALTHY_CONDITION), condition] };
          }),
        this.#sleep,
      ).then(
        (written) => {
          if (written) this.#log.info('WorkloadEntry health updated', { entry: `${target.namespace}/${target.name}`, healthy });
        },
        (err: unknown) => {
          this.stats.errors++;
          this.#log.warn('cannot update WorkloadEntry health', { entry: `${target.namespace}/${target.name}`, error: errorMessage(err) });
        },
      );
    });
  }

  /** A WorkloadGroup appeared: the proxies of that group already connected get their entries (istiod's late registration). */
  onGroupAdded(namespace: string, name: string): void {
    if (this.#o.autoRegistration === false) return;
    for (const conn of this.#conns.forGroup(namespace, name)) {
      const target = this.#targets.get(conn.id);
      if (!target?.auto) continue;
      void this.#serial(target, () => this.#register(target, conn)).catch((err: unknown) =>
        this.#log.warn('late auto-registration failed', { proxy: conn.proxy.id, error: errorMessage(err) }),
      );
    }
  }

  /**
   * A WorkloadGroup went away. On the API server its entries go with it (their ownerReference);
   * the in-memory store of file mode has no garbage collector, so its entries are removed here.
   */
  async onGroupDeleted(namespace: string, name: string): Promise<void> {
    if (this.#o.store.kind !== 'memory') return;
    for (const e of await this.#o.store.list()) {
      if (e.namespace !== namespace || e.annotations[AUTO_REGISTRATION_GROUP_ANNOTATION] !== name) continue;
      await this.#serial(e, async () => {
        if (await this.#o.store.remove(e.namespace, e.name, (cur) => cur.annotations[AUTO_REGISTRATION_GROUP_ANNOTATION] === name))
          this.#log.info('removed the auto-registered WorkloadEntry of a deleted WorkloadGroup', { entry: `${e.namespace}/${e.name}` });
      });
    }
  }

  /**
   * Whether an entry is due for cleanup (istiod's shouldCleanupEntry): auto-registered (or carrying a
   * health condition of a health-checked entry), not connected — or connected for longer than any
   * stream lives, a leak from a control plane that died with its proxy — and disconnected for at
   * least the grace period.
   */
  shouldCleanup(e: EntryObject): boolean {
    if (!isAutoRegistered(e) && !(isHealthChecked(e) && hasHealthCondition(e))) return false;
    const now = this.#clock.now();
    const connected = e.annotations[CONNECTED_AT_ANNOTATION] ?? '';
    if (connected !== '') {
      const at = parseTime(connected);
      return at !== undefined && now - at > this.#maxConnectionAgeMs;
    }
    const disconnected = e.annotations[DISCONNECTED_AT_ANNOTATION] ?? '';
    if (disconnected === '') return false;
    const at = parseTime(disconnected);
    return at === undefined || now - at >= this.#o.gracePeriodMs;
  }

  /** The periodic sweep: every entry of the store due for cleanup. */
  async sweep(): Promise<void> {
    const entries = await this.#o.store.list().catch((err: unknown) => {
      this.#log.warn('cannot list WorkloadEntries for cleanup', { error: errorMessage(err) });
      return [];
    });
    for (const e of entries) if (this.shouldCleanup(e)) await this.#cleanup(e, true);
  }

  async #targetFor(proxy: Proxy): Promise<Target | undefined> {
    const md = registrationMetadata(proxy);
    const key: ProxyKey = { network: md.network, ip: proxy.ipAddresses[0] ?? '', group: md.group, namespace: proxy.namespace };
    if (this.#o.autoRegistration !== false && md.group !== '') {
      const name = autoRegisteredEntryName(proxy, md);
      if (name === undefined) {
        this.#log.error('auto-registration failed: the proxy has no IP address', { proxy: proxy.id });
        return undefined;
      }
      return { namespace: proxy.namespace, name, auto: true, key, md };
    }
    if (this.#o.healthChecks === false || md.workloadEntry === '') return undefined;
    const entry = await this.#o.store.get(proxy.namespace, md.workloadEntry);
    if (!entry) {
      const what = `WorkloadEntry ${proxy.namespace}/${md.workloadEntry}`;
      // File mode: entries from files are read-only here, so their health cannot be written.
      if (this.#o.store.kind === 'memory') {
        this.#log.warn(`health checks of ${what} are not written: only auto-registered entries can be in file mode`, { proxy: proxy.id });
        return undefined;
      }
      throw new MeshError(
        'FAILED_PRECONDITION',
        `proxy metadata indicates that it must correspond to an existing WorkloadEntry, however ${what} is not found`,
      );
    }
    if (entry.annotations[HEALTH_CHECKS_ENABLED_ANNOTATION] === undefined) return undefined;
    this.#checkIdentity(proxy, entry);
    return { namespace: proxy.namespace, name: entry.name, auto: false, key, md };
  }

  /** istiod's ensureProxyCanControlEntry. */
  #checkIdentity(proxy: Proxy, e: EntryObject): void {
    if (this.#o.validateIdentity === false) return;
    const id = this.#o.identity?.(proxy);
    if (!id) throw new MeshError('PERMISSION_DENIED', 'registration of WorkloadEntry requires a verified identity');
    if (id.namespace !== e.namespace)
      throw new MeshError('PERMISSION_DENIED', `registration of WorkloadEntry namespace mismatch: "${id.namespace}" vs "${e.namespace}"`);
    const sa = typeof e.spec.serviceAccount === 'string' ? e.spec.serviceAccount : '';
    if (sa !== '' && id.serviceAccount !== sa)
      throw new MeshError('PERMISSION_DENIED', `registration of WorkloadEntry service account mismatch: "${id.serviceAccount}" vs "${sa}"`);
  }

  async #register(t: Target, conn: WorkloadConnection): Promise<void> {
    const at = Math.floor(conn.connectedAt);
    const existing = await this.#o.store.get(t.namespace, t.name);
    if (existing) {
      this.#checkIdentity(conn.proxy, existing);
      if (await this.#markConnected(t, at)) {
        this.stats.updates++;
        this.#log.info('auto-registered WorkloadEntry marked connected', { entry: `${t.namespace}/${t.name}` });
      }
      return;
    }
    const group = this.#o.group(t.namespace, t.md.group);
    if (!group) {
      this.stats.errors++;
      throw new MeshError(
        'FAILED_PRECONDITION',
        `auto-registration WorkloadEntry of ${conn.proxy.id} failed: cannot find WorkloadGroup ${t.namespace}/${t.md.group}`,
      );
    }
    const entry = entryFromGroup(t.name, conn.proxy, t.md, group);
    this.#checkIdentity(conn.proxy, entry);
    // Created meanwhile by another stream or instance (its cache lags): then it is an update.
    if (!(await this.#o.store.create(withConnectMeta(entry, this.#o.instanceId, at)))) {
      if (await this.#markConnected(t, at)) this.stats.updates++;
      return;
    }
    this.stats.registrations++;
    this.#log.info('auto-registered WorkloadEntry', {
      entry: `${t.namespace}/${t.name}`,
      address: entry.spec.address,
      healthChecks: entry.annotations[HEALTH_CHECKS_ENABLED_ANNOTATION] === 'true',
    });
  }

  async #becomeController(t: Target, conn: WorkloadConnection): Promise<void> {
    if (await this.#markConnected(t, Math.floor(conn.connectedAt)))
      this.#log.info('health-checked WorkloadEntry marked connected', { entry: `${t.namespace}/${t.name}` });
  }

  /** istiod's changeWorkloadEntryStateToConnected. */
  #markConnected(t: Target, at: number): Promise<boolean> {
    return this.#o.store.update(t.namespace, t.name, (cur) => {
      // A disconnect after this connect was already written: this connect is stale.
      const disconnected = parseTime(cur.annotations[DISCONNECTED_AT_ANNOTATION]);
      if (disconnected !== undefined && at < disconnected) return undefined;
      const last = parseTime(cur.annotations[CONNECTED_AT_ANNOTATION]) ?? -Infinity;
      // The proxy connected to another instance later than this.
      if (at < last) return undefined;
      if (cur.annotations[WORKLOAD_CONTROLLER_ANNOTATION] === this.#o.instanceId && !(at > last)) return undefined;
      return withConnectMeta(cur, this.#o.instanceId, at);
    });
  }

  /** istiod's changeWorkloadEntryStateToDisconnected. */
  #markDisconnected(t: Target, disconnectedAt: number, connectedAt: number): Promise<boolean> {
    return this.#o.store.update(t.namespace, t.name, (cur) => {
      const last = parseTime(cur.annotations[CONNECTED_AT_ANNOTATION]);
      // Reconnected (here or elsewhere) after the stream that ended had connected.
      if (last !== undefined && last > connectedAt) return undefined;
      if (cur.annotations[WORKLOAD_CONTROLLER_ANNOTATION] !== this.#o.instanceId) return undefined;
      if (disconnectedAt < (last ?? -Infinity)) return undefined;
      const { [CONNECTED_AT_ANNOTATION]: _gone, ...rest } = cur.annotations;
      return { ...cur, annotations: { ...rest, [DISCONNECTED_AT_ANNOTATION]: formatTime(disconnectedAt) } };
    });
  }

  /** Removes an auto-registered entry, or the health condition of a health-checked one — if still due on its current version. */
  async #cleanup(e: EntryObject, periodic: boolean): Promise<void> {
    const entry = `${e.namespace}/${e.name}`;
    try {
      if (isAutoRegistered(e)) {
        if (await this.#o.store.remove(e.namespace, e.name, (cur) => this.shouldCleanup(cur))) {
          this.stats.deletes++;
          this.#log.info('cleaned up auto-registered WorkloadEntry', { entry, periodic });
        }
        return;
      }
      const written = await this.#o.store.update(e.namespace, e.name, (cur) =>
        this.shouldCleanup(cur) ? { ...cur, conditions: cur.conditions.filter((c) => c.type !== HEALTHY_CONDITION) } : undefined,
      );
      if (written) this.#log.info('cleaned up the health of WorkloadEntry', { entry, periodic });
    } catch (err) {
      this.stats.errors++;
      this.#log.warn('cannot clean up WorkloadEntry', { entry, error: errorMessage(err) });
    }
  }

  #serial<T>(t: { readonly namespace: string; readonly name: string }, step: () => Promise<T>): Promise<T> {
    const k = `${t.namespace}/${t.name}`;
    const prev = this.#tails.get(k) ?? Promise.resolve();
    const run = prev.then(step);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.#tails.set(k, tail);
    void tail.then(() => {
      if (this.#tails.get(k) === tail) this.#tails.delete(k);
    });
    return run;
  }

  #after(ms: number, fn: () => Promise<void>): void {
    if (this.#stopped) return;
    const handle = this.#clock.setTimeout(() => {
      this.#timers.delete(handle);
      if (!this.#stopped) void fn();
    }, ms);
    this.#timers.add(handle);
  }

  readonly #sleep = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      this.#clock.setTimeout(resolve, ms);
    });
}
