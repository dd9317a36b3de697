/**
 * One measured change, as the load generator sees it: which proxies are expected to converge
 * (decided from what they hold when the watch begins), when each did, and who else received
 * anything. Reports once the expected proxies converged (or the timeout passed), the minimum
 * settle time after the write passed, and no proxy received anything for the quiet window.
 */
import { nowMs } from '../../test/support/raw-ads-client.js';
import type { ConvergedMsg, GroupReach, WatchMsg } from './protocol.js';
import type { SimulatedClient } from './simulated-client.js';
import { matchesFilter } from './watch-condition.js';

interface Snapshot {
  readonly responseCount: number;
  readonly noopResponses: number;
  readonly bytes: number;
  readonly responses: Readonly<Record<string, number>>;
}

const snap = (c: SimulatedClient): Snapshot => ({
  responseCount: c.responseCount,
  noopResponses: c.noopResponses,
  bytes: c.bytes,
  responses: { ...c.responses },
});

function reach(clients: readonly SimulatedClient[], before: ReadonlyMap<SimulatedClient, Snapshot>): GroupReach {
  let reached = 0;
  let bytes = 0;
  let noopResponses = 0;
  const responses: Record<string, number> = {};
  for (const c of clients) {
    const b = before.get(c);
    if (!b) continue;
    if (c.responseCount > b.responseCount) reached++;
    bytes += c.bytes - b.bytes;
    noopResponses += c.noopResponses - b.noopResponses;
    for (const [k, v] of Object.entries(c.responses)) {
      const d = v - (b.responses[k] ?? 0);
      if (d !== 0) responses[k] = (responses[k] ?? 0) + d;
    }
  }
  return { proxies: clients.length, reached, responses, noopResponses, bytes };
}

export class WatchSession {
  readonly expected: SimulatedClient[] = [];
  private readonly others: SimulatedClient[] = [];
  private readonly before = new Map<SimulatedClient, Snapshot>();
  private remaining: number;
  private lastResponseAt = 0;
  private convergedDoneAt: number | undefined;
  private writtenAt: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private done = false;

  constructor(
    private readonly m: WatchMsg,
    clients: readonly SimulatedClient[],
    private readonly report: (msg: ConvergedMsg) => void,
  ) {
    for (const c of clients) {
      const expected = matchesFilter(c.plan, c.holdings, m.expect);
      (expected ? this.expected : this.others).push(c);
      c.watch(expected ? m.until : undefined);
      this.before.set(c, snap(c));
    }
    this.remaining = this.expected.length;
  }

  onResponse(at: number): void {
    if (at > this.lastResponseAt) this.lastResponseAt = at;
  }

  onConverged(): void {
    if (--this.remaining === 0) this.convergedDoneAt = nowMs();
  }

  /** The change is on disk: start the clocks. */
  written(at: number): void {
    this.writtenAt = at;
    if (this.remaining === 0) this.convergedDoneAt = nowMs();
    this.timer = setInterval(() => this.poll(), 25);
  }

  private poll(): void {
    if (this.done || this.writtenAt === undefined) return;
    const now = nowMs();
    const timedOut = now - this.writtenAt >= this.m.timeoutMs;
    if (this.convergedDoneAt === undefined && !timedOut) return;
    const sinceLast = now - Math.max(this.lastResponseAt, this.convergedDoneAt ?? 0);
    // A proxy that keeps receiving never lets the window go quiet: the timeout (doubled) caps the wait.
    const settled = now - this.writtenAt >= this.m.minSettleMs && sinceLast >= this.m.quietMs;
    if (!settled && now - this.writtenAt < 2 * this.m.timeoutMs) return;
    this.finish();
  }

  private finish(): void {
    this.done = true;
    if (this.timer) clearInterval(this.timer);
    const byKind: Record<string, number> = {};
    for (const c of this.others) {
      if (c.responseCount > (this.before.get(c)?.responseCount ?? 0)) byKind[c.plan.kind] = (byKind[c.plan.kind] ?? 0) + 1;
    }
    const arrivals = this.expected.map((c) => c.convergedAt ?? null);
    for (const c of [...this.expected, ...this.others]) c.watch(undefined);
    this.report({
      type: 'converged',
      complete: this.remaining === 0,
      arrivals,
      expected: reach(this.expected, this.before),
      others: reach(this.others, this.before),
      othersReachedByKind: byKind,
      lastResponseAt: this.lastResponseAt,
    });
  }

  cancel(): void {
    this.done = true;
    if (this.timer) clearInterval(this.timer);
  }
}
