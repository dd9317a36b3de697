/**
 * Load generator: simulated proxies (Envoy sidecars and routers, proxyless gRPC clients) in one
 * process, driven by a bench over IPC (bench/load-gen/protocol.ts). Started with
 * child_process.fork (bench/lib/load-gen-pool.ts); exits when told to stop, when the parent goes
 * away, or after a hard deadline.
 */
import { nowMs } from '../../test/support/raw-ads-client.js';
import { EnvoyClient } from './envoy-client.js';
import { internedCount } from './holdings.js';
import type { FromLoadGen, StartMsg, SyncedMsg, ToLoadGen } from './protocol.js';
import { ProxylessClient } from './proxyless-client.js';
import type { ClientHooks, ProxyCounters, SimulatedClient } from './simulated-client.js';
import { WatchSession } from './watch-session.js';

const HARD_DEADLINE_MS = Number(process.env.LOAD_GEN_DEADLINE_MS ?? 15 * 60_000);

function send(m: FromLoadGen): void {
  process.send?.(m);
}

if (!process.send) {
  console.error('bench/load-gen/main.ts must be started by a bench (it needs an IPC channel)');
  process.exit(2);
}

const counters: ProxyCounters = { bytes: 0, responses: {} };
let clients: SimulatedClient[] = [];
let startedAt = 0;
let syncedCount = 0;
let syncTimer: NodeJS.Timeout | undefined;
let progressTimer: NodeJS.Timeout | undefined;
let syncReported = false;
let watch: WatchSession | undefined;

function reportSynced(complete: boolean): void {
  if (syncReported) return;
  syncReported = true;
  if (syncTimer) clearTimeout(syncTimer);
  if (progressTimer) clearInterval(progressTimer);
  const streamErrors: Record<string, number> = {};
  for (const c of clients) for (const [k, v] of Object.entries(c.streamErrors)) streamErrors[k] = (streamErrors[k] ?? 0) + v;
  let lastSyncedAt = startedAt;
  for (const c of clients) if (c.syncedAt !== undefined && c.syncedAt > lastSyncedAt) lastSyncedAt = c.syncedAt;
  const msg: SyncedMsg = {
    type: 'synced',
    complete,
    synced: syncedCount,
    total: clients.length,
    startedAt,
    lastSyncedAt,
    syncMs: clients.map((c) => (c.syncedAt === undefined ? null : c.syncedAt - startedAt)),
    ownSyncMs: clients.map((c) => (c.syncedAt === undefined ? null : c.syncedAt - c.openedAt)),
    bytes: counters.bytes,
    responses: { ...counters.responses },
    reconnects: clients.reduce((a, c) => a + c.reconnects, 0),
    streamErrors,
    distinctResources: internedCount(),
  };
  send(msg);
}

function start(m: StartMsg): void {
  startedAt = nowMs();
  const hooks: ClientHooks = {
    counters,
    delta: m.delta,
    onSynced: () => {
      syncedCount++;
      if (syncedCount === clients.length) reportSynced(true);
    },
    onConverged: () => watch?.onConverged(),
    onResponse: (_c, at) => watch?.onResponse(at),
  };
  clients = m.proxies.map((p) => (p.kind === 'proxyless' ? new ProxylessClient(m.addr, p, hooks) : new EnvoyClient(m.addr, p, hooks)));
  if (clients.length === 0) reportSynced(true);
  // Open the streams a batch per event-loop turn, so responses to the first ones are read while
  // the rest connect (all at once would block the loop for seconds at 10k clients).
  const batch = Math.max(1, m.connectBatch ?? 200);
  const openFrom = (i: number): void => {
    for (const c of clients.slice(i, i + batch)) c.start();
    if (i + batch < clients.length) setImmediate(() => openFrom(i + batch));
  };
  openFrom(0);
  progressTimer = setInterval(() => send({ type: 'progress', synced: syncedCount, total: clients.length }), 1000);
  syncTimer = setTimeout(() => reportSynced(false), m.syncTimeoutMs);
}

function stop(code: number): never {
  for (const c of clients) c.close();
  process.exit(code);
}

process.on('message', (raw: unknown) => {
  const m = raw as ToLoadGen;
  try {
    if (m.type === 'start') start(m);
    else if (m.type === 'watch') {
      watch?.cancel();
      const w = new WatchSession(m, clients, (msg) => send(msg));
      watch = w;
      send({ type: 'watching', expected: w.expected.length });
    } else if (m.type === 'written') watch?.written(m.at);
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
