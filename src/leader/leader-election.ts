/**
 * Leader election on a coordination.k8s.io/v1 Lease, with client-go's algorithm (as istiod uses it):
 *
 * - a candidate reads the lease every retryPeriod (×[1, 1.2) jitter); a lease held by someone else
 *   counts as valid until leaseDurationSeconds after the moment *this process* first saw its
 *   current record (local clock only — no trust in other machines' clocks);
 * - taking an expired or released lease, or renewing one's own, is an update naming the
 *   resourceVersion read (409 Conflict → someone else won); taking it from another holder counts a
 *   leaseTransition;
 * - the leader renews every retryPeriod; if no renewal succeeds within renewDeadline it stops
 *   leading (its tasks are aborted) and becomes a candidate again (istiod's Run loop);
 * - stop() while leading aborts the tasks, waits for them, then releases the lease (empty holder,
 *   1 s duration: istiod's ReleaseOnCancel) so a follower takes over at its next retry instead of
 *   after a whole lease duration.
 */
import { statusCodeOf } from '../config/sources/kube/index.js';
import { errorMessage } from '../util/errors.js';
import type { Logger } from '../util/log.js';
import type { KubeConfig } from '../kube/index.js';
import { LeaseLock, type ObservedLease, type RecordToWrite } from './lease-lock.js';
import { RETRY_JITTER } from './options.js';

export interface LeaderElectionConfig {
  readonly kubeConfig: KubeConfig;
  /** Where the Lease lives (istiod's namespace, POD_NAMESPACE). */
  readonly namespace: string;
  /** Lease name, e.g. istio-namespace-controller-election. */
  readonly name: string;
  readonly identity: string;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
  readonly logger: Logger;
  /** Runs the leader's work until `signal` aborts; the promise ends when the work has stopped. */
  readonly onStartedLeading: (signal: AbortSignal) => Promise<void> | void;
  readonly onStoppedLeading?: () => void;
  /** Called when the observed holder changes (including to this process, or to '' on release). */
  readonly onNewLeader?: (identity: string) => void;
}

export interface LeaderElection {
  isLeader(): boolean;
  /** The holder last seen ('' when none). */
  holder(): string;
  /** Times this process started leading. */
  terms(): number;
  /** Stops campaigning; a leader stops its work and releases the lease first. Idempotent. */
  stop(): Promise<void>;
}

export function startLeaderElection(cfg: LeaderElectionConfig): LeaderElection {
  return new Elector(cfg);
}

class Elector implements LeaderElection {
  readonly #cfg: LeaderElectionConfig;
  readonly #lock: LeaseLock;
  readonly #log: Logger;
  #observed: ObservedLease | undefined;
  /** Local time at which #observed's record was first seen. */
  #observedAt = 0;
  #leading = false;
  #terms = 0;
  #stopped = false;
  #wake: (() => void) | undefined;
  #stopping: Promise<void> | undefined;
  readonly #loop: Promise<void>;
  /** Whether the last failure of each kind was logged already (one warning per outage, not one per retry). */
  #failing = false;

  constructor(cfg: LeaderElectionConfig) {
    this.#cfg = cfg;
    this.#lock = new LeaseLock(cfg.kubeConfig, cfg.namespace, cfg.name);
    this.#log = cfg.logger;
    this.#loop = this.#run().catch((err: unknown) =>
      this.#log.error('leader election loop failed', { lease: this.#where(), error: errorMessage(err) }),
    );
  }

  isLeader(): boolean {
    return this.#leading;
  }

  holder(): string {
    return this.#observed?.record.holderIdentity ?? '';
  }

  terms(): number {
    return this.#terms;
  }

  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      this.#stopped = true;
      this.#wake?.();
      await this.#loop;
    })();
    return this.#stopping;
  }

  async #run(): Promise<void> {
    this.#log.info('leader election: campaigning', {
      lease: this.#where(),
      identity: this.#cfg.identity,
      leaseDurationMs: this.#cfg.leaseDurationMs,
      renewDeadlineMs: this.#cfg.renewDeadlineMs,
      retryPeriodMs: this.#cfg.retryPeriodMs,
    });
    while (!this.#stopped) {
      while (!this.#stopped && !(await this.#tryAcquireOrRenew()))
        await this.#sleep(this.#cfg.retryPeriodMs * (1 + Math.random() * (RETRY_JITTER - 1)));
      if (this.#stopped) {
        await this.#release(); // stop() raced with a successful acquire: do not sit on the lease until it expires
        return;
      }
      const ctrl = new AbortController();
      this.#leading = true;
      this.#terms++;
      this.#log.info('leader election lock obtained', {
        lease: this.#where(),
        identity: this.#cfg.identity,
        leaseTransitions: this.#observed?.record.leaseTransitions,
      });
      const work = Promise.resolve()
        .then(() => this.#cfg.onStartedLeading(ctrl.signal))
        .catch((err: unknown) => this.#log.error('leader work failed', { lease: this.#where(), error: errorMessage(err) }));
      await this.#renewWhileLeading();
      ctrl.abort();
      this.#leading = false;
      // The work must stop before the lease is released (or lost for good); a task that ignores
      // its signal gets one renew deadline.
      await Promise.race([work, new Promise((r) => setTimeout(r, this.#cfg.renewDeadlineMs).unref())]);
      if (this.#stopped) {
        await this.#release();
        this.#cfg.onStoppedLeading?.();
        return;
      }
      this.#log.warn('leader election lock lost', { lease: this.#where(), identity: this.#cfg.identity });
      this.#cfg.onStoppedLeading?.();
    }
  }

  /** Renews every retryPeriod until a renewal misses its deadline or stop() is called. */
  async #renewWhileLeading(): Promise<void> {
    for (;;) {
      await this.#sleep(this.#cfg.retryPeriodMs);
      if (this.#stopped) return;
      const deadline = Date.now() + this.#cfg.renewDeadlineMs;
      let renewed = false;
      while (!this.#stopped && Date.now() < deadline) {
        if (await this.#tryAcquireOrRenew(deadline - Date.now())) {
          renewed = true;
          break;
        }
        await this.#sleep(Math.min(this.#cfg.retryPeriodMs, Math.max(0, deadline - Date.now())));
      }
      if (this.#stopped) return;
      if (!renewed) {
        this.#log.error("leader election: failed to renew the lease within the renew deadline; stopping the leader's work", {
          lease: this.#where(),
          renewDeadlineMs: this.#cfg.renewDeadlineMs,
        });
        return;
      }
    }
  }

  /** One round of client-go's tryAcquireOrRenew; true when this process holds the lease afterwards. */
  async #tryAcquireOrRenew(timeoutMs = this.#cfg.renewDeadlineMs): Promise<boolean> {
    const now = new Date();
    const mine = (acquired: Date | string, transitions: number): RecordToWrite => ({
      holderIdentity: this.#cfg.identity,
      leaseDurationSeconds: Math.max(1, Math.round(this.#cfg.leaseDurationMs / 1000)),
      acquireTime: acquired,
      renewTime: now,
      leaseTransitions: transitions,
    });
    let current: ObservedLease | undefined;
    try {
      current = await withTimeout(this.#lock.get(), timeoutMs);
    } catch (err) {
      this.#requestFailed('read', err);
      return false;
    }
    if (!current) {
      const created = await withTimeout(this.#lock.create(mine(now, 0)), timeoutMs).catch((err: unknown) => ({
        ok: false as const,
        conflict: false,
        status: undefined,
        error: err,
      }));
      if (!created.ok) {
        if (!created.conflict) this.#requestFailed('create', created.error, created.status);
        return false;
      }
      this.#observe(created.lease);
      this.#recovered();
      return true;
    }
    this.#observe(current);
    const rec = current.record;
    const heldByMe = rec.holderIdentity === this.#cfg.identity;
    if (rec.holderIdentity !== '' && !heldByMe && this.#observedAt + rec.leaseDurationSeconds * 1000 > now.getTime()) {
      this.#recovered();
      return false;
    }
    const next = heldByMe ? mine(rec.acquireTime || now, rec.leaseTransitions) : mine(now, rec.leaseTransitions + 1);
    const updated = await withTimeout(this.#lock.update(current.resourceVersion, next), timeoutMs).catch((err: unknown) => ({
      ok: false as const,
      conflict: false,
      status: undefined,
      error: err,
    }));
    if (!updated.ok) {
      if (!updated.conflict) this.#requestFailed('update', updated.error, updated.status);
      return false;
    }
    this.#observe(updated.lease);
    this.#recovered();
    return true;
  }

  /** Gives the lease up if this process still holds it (empty holder, 1 s duration, as client-go's release). */
  async #release(): Promise<void> {
    const held = this.#observed;
    if (!held || held.record.holderIdentity !== this.#cfg.identity) return;
    const now = new Date();
    const out = await withTimeout(
      this.#lock.update(held.resourceVersion, {
        holderIdentity: '',
        leaseDurationSeconds: 1,
        acquireTime: now,
        renewTime: now,
        leaseTransitions: held.record.leaseTransitions,
      }),
      this.#cfg.renewDeadlineMs,
    ).catch((err: unknown) => ({ ok: false as const, conflict: false, status: undefined, error: err }));
    if (out.ok) this.#log.info('leader election lock released', { lease: this.#where(), identity: this.#cfg.identity });
    else
      this.#log.warn('leader election: could not release the lease; others take over when it expires', {
        lease: this.#where(),
        status: out.status,
        error: errorMessage(out.error),
      });
  }

  #observe(lease: ObservedLease): void {
    const before = this.#observed?.record;
    const changed = !before || JSON.stringify(before) !== JSON.stringify(lease.record);
    if (changed) this.#observedAt = Date.now();
    this.#observed = lease;
    if (before?.holderIdentity !== lease.record.holderIdentity) {
      this.#log.info('leader election: new leader observed', {
        lease: this.#where(),
        holder: lease.record.holderIdentity,
        self: lease.record.holderIdentity === this.#cfg.identity,
      });
      this.#cfg.onNewLeader?.(lease.record.holderIdentity);
    }
  }

  #requestFailed(what: string, err: unknown, status = statusCodeOf(err)): void {
    const fields = { lease: this.#where(), status, error: errorMessage(err) };
    if (status === 403 && !this.#failing) {
      this.#log.error(
        `leader election: forbidden to ${what} the Lease; meshpilot's service account needs get, create and update on leases.coordination.k8s.io in namespace ${this.#cfg.namespace} (see manifests/rbac)`,
        fields,
      );
    } else if (this.#failing) {
      this.#log.debug(`leader election: lease ${what} failed`, fields);
    } else {
      this.#log.warn(`leader election: lease ${what} failed`, fields);
    }
    this.#failing = true;
  }

  #recovered(): void {
    this.#failing = false;
  }

  #where(): string {
    return `${this.#cfg.namespace}/${this.#cfg.name}`;
  }

  #sleep(ms: number): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        resolve();
      }
      this.#wake = done;
    });
  }
}

/** Rejects after `ms` (the request itself is left to finish or fail on its own). */
function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer from the API server within ${Math.round(ms)} ms`)), Math.max(1, ms));
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}
