/**
 * Load generator: N simulated proxyless ADS clients in one process, driven by the bench over IPC
 * (bench/load-gen/protocol.ts). Started by bench/ads-bench.ts with child_process.fork; exits when
 * told to stop, when the parent goes away, or after a hard deadline.
 */
import { nowMs } from '../../test/support/raw-ads-client.js';
import type { ConvergedMsg, FromLoadGen, StartMsg, SyncedMsg, ToLoadGen, WatchMsg } from './protocol.js';
import { SimulatedProxy, type ProxyCounters } from './simulated-proxy.js';

const HARD_DEADLINE_MS = Number(process.env.LOAD_GEN_DEADLINE_MS ?? 15 * 60_000);

function send(m: FromLoadGen): void {
  process.send?.(m);
}

if (!process.send) {
  console.error('bench/load-gen/main.ts must be started by bench/ads-bench.ts (needs an IPC channel)');
  process.exit(2);
}

const counters: ProxyCounters = { bytes: 0, responses: {} };
let proxies: SimulatedProxy[] = [];
let startedAt = 0;
let syncedCount = 0;
let syncTimer: NodeJS.Timeout | undefined;
let progressTimer: NodeJS.Timeout | undefined;
let syncReported = false;

function reportSynced(complete: boolean): void {
  if (syncReported) return;
  syncReported = true;
  if (syncTimer) clearTimeout(syncTimer);
  if (progressTimer) clearInterval(progressTimer);
  const streamErrors: Record<string, number> = {};
  for (const p of proxies) for (const [k, v] of Object.entries(p.streamErrors)) streamErrors[k] = (streamErrors[k] ?? 0) + v;
  const syncTimes = proxies.map((p) => p.syncedAt).filter((x): x is number => x !== undefined);
  const msg: SyncedMsg = {
    type: 'synced',
    complete,
    synced: syncedCount,
    total: proxies.length,
    startedAt,
    lastSyncedAt: syncTimes.length ? Math.max(...syncTimes) : startedAt,
    syncMs: proxies.map((p) => (p.syncedAt === undefined ? null : p.syncedAt - startedAt)),
    bytes: counters.bytes,
    responses: { ...counters.responses },
    reconnects: proxies.reduce((a, p) => a + p.reconnects, 0),
    streamErrors,
  };
  send(msg);
}

function start(m: StartMsg): void {
  startedAt = nowMs();
  proxies = m.plans.map(
    (listeners, i) =>
      new SimulatedProxy(
        m.addr,
        i,
        listeners,
        counters,
        () => {
          syncedCount++;
          if (syncedCount === proxies.length) reportSynced(true);
        },
        () => onMarker(),
        m.delta ?? false,
      ),
  );
  for (const p of proxies) p.start();
  progressTimer = setInterval(() => send({ type: 'progress', synced: syncedCount, total: proxies.length }), 1000);
  syncTimer = setTimeout(() => reportSynced(false), m.syncTimeoutMs);
}

interface Watch {
  readonly watchers: SimulatedProxy[];
  readonly others: SimulatedProxy[];
  readonly bytesAtStart: number;
  readonly responsesAtStart: { watchers: Record<string, number>; others: Record<string, number> };
  readonly timer: NodeJS.Timeout;
  seen: number;
  done: boolean;
}
let watch: Watch | undefined;

function onMarker(): void {
  if (!watch || watch.done) return;
  watch.seen++;
  if (watch.seen === watch.watchers.length) finishWatch(true);
}

function sumResponses(ps: readonly SimulatedProxy[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const p of ps) for (const [k, v] of Object.entries(p.responses)) out[k] = (out[k] ?? 0) + v;
  return out;
}

function diff(a: Record<string, number>, b: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
    const d = (a[k] ?? 0) - (b[k] ?? 0);
    if (d !== 0) out[k] = d;
  }
  return out;
}

function startWatch(m: WatchMsg): void {
  const watchers = proxies.filter((p) => p.listeners.includes(m.listener));
  const others = proxies.filter((p) => !p.listeners.includes(m.listener));
  for (const p of watchers) p.watch(m.marker, m.in ?? 'rds');
  const timer = setTimeout(() => finishWatch(false), m.timeoutMs);
  watch = {
    watchers,
    others,
    bytesAtStart: counters.bytes,
    responsesAtStart: { watchers: sumResponses(watchers), others: sumResponses(others) },
    timer,
    seen: 0,
    done: false,
  };
  send({ type: 'watching', watchers: watchers.length });
}

function finishWatch(complete: boolean): void {
  if (!watch || watch.done) return;
  const w = watch;
  w.done = true;
  clearTimeout(w.timer);
  // Let responses that are already in flight to the others land before counting them.
  setTimeout(() => {
    const msg: ConvergedMsg = {
      type: 'converged',
      complete,
      arrivals: w.watchers.map((p) => p.markerAt ?? null),
      bytes: counters.bytes - w.bytesAtStart,
      watcherResponses: diff(sumResponses(w.watchers), w.responsesAtStart.watchers),
      otherResponses: diff(sumResponses(w.others), w.responsesAtStart.others),
      otherProxies: w.others.length,
    };
    send(msg);
  }, 500).unref();
}

function stop(code: number): never {
  for (const p of proxies) p.close();
  process.exit(code);
}

process.on('message', (raw: unknown) => {
  const m = raw as ToLoadGen;
  try {
    if (m.type === 'start') start(m);
    else if (m.type === 'watch') startWatch(m);
    else if (m.type === 'stop') stop(0);
  } catch (err) {
    send({ type: 'failed', error: (err as Error).stack ?? String(err) });
  }
});
process.on('disconnect', () => stop(0));
setTimeout(() => {
  send({ type: 'failed', error: `load generator hit its hard deadline (${HARD_DEADLINE_MS} ms)` });
  stop(3);
}, HARD_DEADLINE_MS).unref();
