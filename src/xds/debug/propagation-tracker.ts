import { isProxyRequest, type PushRequest } from '../../model/index.js';
import type { Logger } from '../../util/log.js';
import type { Connection } from '../connection.js';
import { shortType } from '../type-urls.js';
import type { SentResponse, XdsObserver } from '../xds-observer.js';
import type { NowClock } from './metrics-observer.js';

export type ChangeState = 'in-progress' | 'converged' | 'nacked';

export interface ChangeNack {
  readonly proxy: string;
  readonly connection: string;
  readonly type: string;
  readonly nonce: string;
  readonly message: string;
}

/** One config change (one debounced push) as /debug/push_status shows it. */
export interface ChangeStatus {
  readonly id: number;
  readonly version: string;
  readonly state: ChangeState;
  readonly reasons: Readonly<Record<string, number>>;
  /** Changed configs (first 20; empty = everything). */
  readonly configs: readonly string[];
  readonly full: boolean;
  /** First event of the change (the request's start). */
  readonly startedAt: string;
  /** When the push was published to the queue. */
  readonly publishedAt: string;
  /** Proxies the change had to reach (queued for it). */
  readonly proxies: number;
  readonly acked: number;
  /** Proxies not yet done: push still queued or responses not yet ACKed. */
  readonly pending: readonly { readonly proxy: string; readonly connection: string; readonly types: readonly string[] }[];
  readonly nacked: readonly ChangeNack[];
  /** Proxies that disconnected before they ACKed (forgotten). */
  readonly disconnected: number;
  /** First event → last ACK/NACK, once no proxy is pending. */
  readonly convergenceMs?: number;
}

/** A change without its per-proxy lists: what a live view polls, cheap at thousands of proxies. */
export interface ChangeSummary {
  readonly id: number;
  readonly version: string;
  readonly state: ChangeState;
  readonly reasons: Readonly<Record<string, number>>;
  readonly configs: readonly string[];
  readonly full: boolean;
  /** Epoch ms of the first event and of publication. */
  readonly startedAt: number;
  readonly publishedAt: number;
  readonly proxies: number;
  readonly acked: number;
  readonly pending: number;
  readonly nackedCount: number;
  /** The first NACKs (at most FIRST_NACKS), with Envoy's error. */
  readonly nacked: readonly ChangeNack[];
  readonly disconnected: number;
  readonly convergenceMs?: number;
}

/** One finished change: when, and how long from its first event to the last ACK/NACK. */
export interface Completion {
  readonly at: number;
  readonly ms: number;
  readonly nacked: boolean;
}

const FIRST_NACKS = 5;

function cpuUs(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}
const NO_CHANGES: ReadonlySet<never> = new Set();
/** Finished changes remembered for convergence histograms (a busy hour of one change every 2 s). */
const COMPLETIONS_KEPT = 2048;

interface ProxyProgress {
  readonly proxy: string;
  readonly connection: string;
  /** The push that covers this change has finished on this connection. */
  pushed: boolean;
  /** Responses of this change not yet ACKed: type URL → nonce (a newer response replaces the nonce). */
  readonly pending: Map<string, string>;
}

interface Change {
  readonly id: number;
  /** Order of publication against push begins (see PushBegin). */
  readonly seq: number;
  readonly version: string;
  readonly req: PushRequest;
  readonly publishedAt: number;
  /** The process's CPU time (µs, all threads) when it was published. */
  readonly publishedCpuUs: number;
  readonly total: number;
  readonly progress: Map<Connection, ProxyProgress>;
  readonly nacked: ChangeNack[];
  acked: number;
  disconnected: number;
  doneAt: number | undefined;
}

interface PushBegin {
  readonly req: PushRequest;
  /** Changes published before this push began (seq lower) are covered by it. */
  readonly seq: number;
}

export interface PropagationTrackerOptions {
  readonly logger: Logger;
  readonly clock: NowClock;
  /** Changes kept for /debug/push_status (default 50). */
  readonly keep?: number;
}

/**
 * Follows every config change (each debounced push) to the proxies it had to reach: which have
 * ACKed every response sent for it, which are pending or NACKed, and when it fully converged
 * (logged at info). A response of a later push or of the proxy's own request that replaces a
 * pending one (same type) carries the change too, so ACKing the newer nonce completes it.
 * Memory is bounded: the last `keep` changes, per-proxy detail only while a proxy is pending, and
 * disconnected proxies are forgotten.
 */
export class PropagationTracker implements XdsObserver {
  private readonly log: Logger;
  private readonly clock: NowClock;
  private readonly keep: number;
  private readonly history: Change[] = [];
  /** Open changes each connection still has to finish. */
  private readonly open = new Map<Connection, Set<Change>>();
  private readonly begun = new Map<Connection, PushBegin>();
  private seq = 0;
  private nextId = 0;
  private readonly finished: Completion[] = [];
  private rev = 0;

  constructor(opts: PropagationTrackerOptions) {
    this.log = opts.logger;
    this.clock = opts.clock;
    this.keep = opts.keep ?? 50;
  }

  /** The last changes, newest first. */
  changes(): readonly ChangeStatus[] {
    return this.history.map((c) => this.status(c)).reverse();
  }

  /** The last changes, newest first, with counts instead of per-proxy lists. */
  summaries(): readonly ChangeSummary[] {
    return this.history.map((c) => this.summary(c)).reverse();
  }

  /** Changes finished at or after `sinceMs` (epoch ms), oldest first; the last COMPLETIONS_KEPT at most. */
  completions(sinceMs: number): readonly Completion[] {
    let i = this.finished.length;
    while (i > 0 && (this.finished[i - 1]?.at ?? 0) >= sinceMs) i--;
    return this.finished.slice(i);
  }

  /** Changes on every recorded step (a change published, a proxy done, a change finished): equal revisions, equal summaries. */
  revision(): number {
    return this.rev;
  }

  pushStarted(req: PushRequest, version: string, queued: readonly Connection[]): void {
    const progress = new Map<Connection, ProxyProgress>();
    for (const conn of queued) {
      if (conn.isClosed()) continue;
      progress.set(conn, { proxy: conn.proxy.id, connection: conn.id, pushed: false, pending: new Map() });
    }
    const change: Change = {
      id: ++this.nextId,
      seq: ++this.seq,
      version,
      req,
      publishedAt: this.clock.now(),
      publishedCpuUs: cpuUs(),
      total: progress.size,
      progress,
      nacked: [],
      acked: 0,
      disconnected: 0,
      doneAt: undefined,
    };
    this.history.push(change);
    while (this.history.length > this.keep) {
      const old = this.history.shift();
      if (old) this.forget(old);
    }
    for (const conn of progress.keys()) this.openFor(conn).add(change);
    this.rev++;
    this.maybeDone(change);
  }

  responseSent(conn: Connection, sent: SentResponse): void {
    const open = this.open.get(conn);
    if (!open) return;
    let begin: PushBegin | undefined;
    if (!isProxyRequest(sent.req)) begin = this.beginPush(conn, sent.req);
    for (const change of open) {
      const p = change.progress.get(conn);
      if (!p) continue;
      if (begin && !p.pushed && change.seq < begin.seq) p.pending.set(sent.typeUrl, sent.nonce);
      else if (p.pending.has(sent.typeUrl)) p.pending.set(sent.typeUrl, sent.nonce);
    }
  }

  proxyPushed(conn: Connection, req: PushRequest): void {
    const begin = this.beginPush(conn, req);
    this.begun.delete(conn);
    for (const change of this.open.get(conn) ?? NO_CHANGES) {
      const p = change.progress.get(conn);
      if (!p || p.pushed || change.seq >= begin.seq) continue;
      p.pushed = true;
      this.settle(change, conn, p);
    }
  }

  ackReceived(conn: Connection, typeUrl: string, nonce: string): void {
    // Settling deletes the change from this set while it is iterated, which a Set allows.
    for (const change of this.open.get(conn) ?? NO_CHANGES) {
      const p = change.progress.get(conn);
      if (!p || p.pending.get(typeUrl) !== nonce) continue;
      p.pending.delete(typeUrl);
      this.settle(change, conn, p);
    }
  }

  nackReceived(conn: Connection, typeUrl: string, nonce: string, message: string): void {
    for (const change of [...(this.open.get(conn) ?? [])]) {
      const p = change.progress.get(conn);
      if (!p || p.pending.get(typeUrl) !== nonce) continue;
      change.nacked.push({ proxy: p.proxy, connection: p.connection, type: shortType(typeUrl), nonce, message });
      this.finishProxy(change, conn);
    }
  }

  /** Connections this tracker still refers to (pending detail of recent changes, open pushes): tests check that a closed one is gone. */
  connectionsTracked(): number {
    const conns = new Set<Connection>([...this.open.keys(), ...this.begun.keys()]);
    for (const c of this.history) for (const conn of c.progress.keys()) conns.add(conn);
    return conns.size;
  }

  disconnected(conn: Connection): void {
    for (const change of this.open.get(conn) ?? []) {
      if (!change.progress.delete(conn)) continue;
      change.disconnected++;
      this.rev++;
      this.maybeDone(change);
    }
    this.open.delete(conn);
    this.begun.delete(conn);
  }

  /** The push to `conn` that `req` belongs to; a new request object means a new push began now. */
  private beginPush(conn: Connection, req: PushRequest): PushBegin {
    const cur = this.begun.get(conn);
    if (cur && cur.req === req) return cur;
    const begin: PushBegin = { req, seq: ++this.seq };
    this.begun.set(conn, begin);
    return begin;
  }

  private openFor(conn: Connection): Set<Change> {
    let s = this.open.get(conn);
    if (!s) {
      s = new Set();
      this.open.set(conn, s);
    }
    return s;
  }

  private settle(change: Change, conn: Connection, p: ProxyProgress): void {
    if (!p.pushed || p.pending.size > 0) return;
    change.acked++;
    this.finishProxy(change, conn);
  }

  private finishProxy(change: Change, conn: Connection): void {
    change.progress.delete(conn);
    this.rev++;
    const open = this.open.get(conn);
    open?.delete(change);
    if (open?.size === 0) this.open.delete(conn);
    this.maybeDone(change);
  }

  private maybeDone(change: Change): void {
    if (change.doneAt !== undefined || change.progress.size > 0) return;
    change.doneAt = this.clock.now();
    this.rev++;
    this.finished.push({ at: change.doneAt, ms: change.doneAt - change.req.start, nacked: change.nacked.length > 0 });
    if (this.finished.length > COMPLETIONS_KEPT) this.finished.splice(0, this.finished.length - COMPLETIONS_KEPT);
    const fields = {
      change: change.id,
      version: change.version,
      proxies: change.total,
      acked: change.acked,
      disconnected: change.disconnected,
      ms: Math.round((change.doneAt - change.req.start) * 100) / 100,
      // What delivering it cost: the process's CPU from publication to the last ACK (other work meanwhile included).
      cpuMs: Math.round((cpuUs() - change.publishedCpuUs) / 100) / 10,
    };
    if (change.nacked.length === 0) this.log.info('config change converged', fields);
    else this.log.warn('config change finished with NACKs', { ...fields, nacked: change.nacked.length, firstNack: change.nacked[0] });
  }

  private forget(change: Change): void {
    for (const conn of change.progress.keys()) {
      const open = this.open.get(conn);
      open?.delete(change);
      if (open?.size === 0) this.open.delete(conn);
    }
    change.progress.clear();
  }

  private summary(c: Change): ChangeSummary {
    const done = c.doneAt !== undefined;
    return {
      id: c.id,
      version: c.version,
      state: !done ? 'in-progress' : c.nacked.length > 0 ? 'nacked' : 'converged',
      reasons: Object.fromEntries(c.req.reason),
      configs: [...c.req.configsUpdated].slice(0, 20),
      full: c.req.full,
      startedAt: c.req.start,
      publishedAt: c.publishedAt,
      proxies: c.total,
      acked: c.acked,
      pending: c.progress.size,
      nackedCount: c.nacked.length,
      nacked: c.nacked.slice(0, FIRST_NACKS),
      disconnected: c.disconnected,
      ...(c.doneAt !== undefined ? { convergenceMs: Math.round((c.doneAt - c.req.start) * 100) / 100 } : {}),
    };
  }

  private status(c: Change): ChangeStatus {
    const done = c.doneAt !== undefined;
    return {
      id: c.id,
      version: c.version,
      state: !done ? 'in-progress' : c.nacked.length > 0 ? 'nacked' : 'converged',
      reasons: Object.fromEntries(c.req.reason),
      configs: [...c.req.configsUpdated].slice(0, 20),
      full: c.req.full,
      startedAt: new Date(c.req.start).toISOString(),
      publishedAt: new Date(c.publishedAt).toISOString(),
      proxies: c.total,
      acked: c.acked,
      pending: [...c.progress.values()].map((p) => ({
        proxy: p.proxy,
        connection: p.connection,
        types:
          p.pushed || p.pending.size > 0 ? [...[...p.pending.keys()].map(shortType), ...(p.pushed ? [] : ['(pushing)'])] : ['(queued)'],
      })),
      nacked: c.nacked,
      disconnected: c.disconnected,
      ...(c.doneAt !== undefined ? { convergenceMs: Math.round((c.doneAt - c.req.start) * 100) / 100 } : {}),
    };
  }
}
