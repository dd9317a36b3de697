/**
 * Connection churn: `cycles` connect → subscribe → first response → disconnect
 * cycles against an in-process DiscoveryServer over gRPC (every 10th on a new TCP connection).
 * After an idle pause the server holds no connection: its registry is empty, RSS is back near
 * where it was, and a heap-snapshot census shows no Connection (nor grpc-js server call or node
 * HTTP/2 stream) more than before.
 */
import { startFuzzXdsServer } from '../fuzz/xds-fuzz-server.js';
import { AdsStream, proxylessAdsNode } from '../raw-ads-client.js';
import { TYPE } from '../xds-resources.js';
import { heapAfterGc, MiB, pause, round1, Violations, type FaultFigures } from './figures.js';
import { censusDiff, heapCensus } from './heap-census.js';

/** meshpilot's per-stream class, grpc-js's server call objects, node's server-side HTTP/2 objects. */
const SERVER_CLASSES = ['Connection', 'BaseServerInterceptingCall', 'ServerDuplexStreamImpl', 'ServerHttp2Stream', 'ServerHttp2Session'];

const LISTENER = 'echo.default.svc.cluster.local:80';

export interface ChurnOptions {
  readonly cycles?: number;
  /** Cycles in flight at once (default 20). */
  readonly concurrency?: number;
  /** Stop early at this time (epoch ms), e.g. the soak's deadline. */
  readonly deadline?: number;
  /** Idle pause before each measurement (default 10 s). */
  readonly idleMs?: number;
}

async function cycle(addr: string, i: number): Promise<number> {
  const t0 = performance.now();
  const s = AdsStream.open(addr, { node: proxylessAdsNode(`churn-${i}`), separateConnection: i % 10 === 0 });
  try {
    s.subscribe(TYPE.LDS, [LISTENER]);
    await s.next(TYPE.LDS, 10_000);
  } finally {
    s.close();
  }
  return performance.now() - t0;
}

export async function churnScenario(o: ChurnOptions = {}): Promise<FaultFigures & { retained: Record<string, number> }> {
  const total = o.cycles ?? 10_000;
  const concurrency = o.concurrency ?? 20;
  const t0 = performance.now();
  const v = new Violations();
  const srv = await startFuzzXdsServer();
  try {
    // Warm-up (code paths compiled, caches filled), then the baseline.
    for (let i = 0; i < 50; i++) await cycle(srv.addr, -1 - i);
    await pause(1000);
    srv.responses.clear();
    // RSS and heap first: parsing a heap snapshot costs far more memory than what is measured.
    const heap0 = heapAfterGc();
    const rss0 = process.memoryUsage().rss;
    const before = heapCensus(SERVER_CLASSES);
    let next = 0;
    let done = 0;
    let maxMs = 0;
    let failures = 0;
    let firstError = '';
    const worker = async (upTo: number): Promise<void> => {
      while (next < upTo && (o.deadline === undefined || Date.now() < o.deadline)) {
        const i = next++;
        try {
          maxMs = Math.max(maxMs, await cycle(srv.addr, i));
          done++;
        } catch (err) {
          failures++;
          firstError ||= (err as Error).message;
        }
      }
    };
    /** Runs cycles up to `upTo`, idles, and measures (heap after GC, RSS). */
    const phase = async (upTo: number): Promise<{ heap: number; rss: number; peak: number }> => {
      await Promise.all(Array.from({ length: concurrency }, () => worker(upTo)));
      const peak = process.memoryUsage().rss;
      // Idle: streams' close events, grpc-js's idle channel timers, FinalizationRegistry callbacks, V8's memory reducer.
      await pause(o.idleMs ?? 10_000);
      // The harness counts responses per connection id: its bookkeeping, not the server's.
      srv.responses.clear();
      return { heap: heapAfterGc(), rss: process.memoryUsage().rss, peak };
    };
    // Two halves: growth that comes with the cycles shows as a difference between them; what the
    // first half costs once (V8's grown heap spaces, malloc arenas) stays.
    const half = await phase(Math.floor(total / 2));
    const all = await phase(total);
    const after = heapCensus(SERVER_CLASSES);
    const open = srv.xds.connectionList().length;
    v.check(failures === 0, `${failures} cycles failed: ${firstError}`);
    v.check(open === 0, `${open} connections still registered`);
    // A few objects may belong to the census moment (a socket closing); leaks grow with cycles.
    const grown = Object.entries(after).filter(([k, n]) => n > (before[k] ?? 0) + 5);
    v.check(grown.length === 0, `retained after ${done} cycles: ${grown.map(([k, n]) => `${k} ${before[k] ?? 0}→${n}`).join(', ')}`);
    const secondHalfHeapMiB = (all.heap - half.heap) / MiB;
    v.check(secondHalfHeapMiB < 8, `heap after GC grew ${round1(secondHalfHeapMiB)} MiB over the second half`);
    return {
      cases: done,
      seconds: (performance.now() - t0) / 1000,
      maxMs,
      rssGrowthMiB: (all.rss - half.rss) / MiB,
      retained: after,
      notes:
        `${done} cycles (${concurrency} at once, every 10th a new TCP connection; clients in the same process); ` +
        `RSS ${round1(rss0 / MiB)} → ${round1(half.rss / MiB)} after half (peak ${round1(half.peak / MiB)}) → ${round1(all.rss / MiB)} MiB after all (peak ${round1(all.peak / MiB)}), each after ${Math.round((o.idleMs ?? 10_000) / 1000)} s idle; ` +
        `heap after GC ${round1(heap0 / MiB)} → ${round1(half.heap / MiB)} → ${round1(all.heap / MiB)} MiB; heap snapshot census before→after: ${censusDiff(before, after)}; registered connections ${open}`,
      ...v.failure,
    };
  } finally {
    await srv.stop();
  }
}
