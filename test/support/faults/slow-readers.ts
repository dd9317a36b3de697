/**
 * Slow readers: proxies that stop reading (no HTTP/2 window update) while the
 * config changes `changes` times. meshpilot keeps per stream one response waiting on the transport
 * and one merged pending push (built from the newest snapshot when it goes out), so its memory
 * does not grow with the changes; a healthy proxy beside them keeps converging; a reader that
 * resumes ends on the newest version.
 */
import type { DiscoveryResponse } from '../../../src/gen/envoy/service/discovery/v3/discovery_pb.js';
import { openSlowReader, type SlowReader } from './slow-reader.js';
import { startFuzzXdsServer } from '../fuzz/xds-fuzz-server.js';
import type { AdsNode } from '../raw-ads-client.js';
import { TYPE } from '../xds-resources.js';
import { heapAfterGc, MiB, pause, round1, Violations, type FaultFigures } from './figures.js';

export interface SlowReaderOptions {
  /** Streams that stop reading (default 20). */
  readonly readers?: number;
  /** Config changes while they do not read (default 50). */
  readonly changes?: number;
  /** Their HTTP/2 receive window (default 16 KiB: filled by the first few pushes). */
  readonly windowBytes?: number;
}

const sidecarNode = (pod: string): AdsNode => ({
  id: `sidecar~127.0.0.1~${pod}.default~default.svc.cluster.local`,
  metadata: { NAMESPACE: 'default' } as never,
});

const hasCluster =
  (host: string) =>
  (r: DiscoveryResponse): boolean =>
    r.typeUrl === TYPE.CDS && r.resources.some((a) => new TextDecoder().decode(a.value).includes(host));

export async function slowReaderScenario(
  o: SlowReaderOptions = {},
): Promise<FaultFigures & { pendingPerStream: number; heapGrowthMiB: number }> {
  const readersN = o.readers ?? 20;
  const changes = o.changes ?? 50;
  const t0 = performance.now();
  const v = new Violations();
  const srv = await startFuzzXdsServer();
  const subs = new Map<string, readonly string[]>([[TYPE.CDS, []]]);
  const readers: SlowReader[] = [];
  try {
    for (let i = 0; i < readersN; i++) readers.push(openSlowReader(srv.addr, sidecarNode(`slow-${i}`), subs, o.windowBytes ?? 16 * 1024));
    const healthy = openSlowReader(srv.addr, sidecarNode('healthy'), subs, 1 << 24);
    readers.push(healthy);
    await Promise.all(readers.map((r) => r.waitFor((x) => x.typeUrl === TYPE.CDS)));
    for (const r of readers.slice(0, readersN)) r.pause();
    const heap0 = heapAfterGc();
    const rss0 = process.memoryUsage().rss;
    let maxMs = 0;
    let host = '';
    for (let i = 0; i < changes; i++) {
      const c0 = performance.now();
      host = srv.change(`slow-${i}`);
      // The healthy proxy converges on every change even though the slow ones hold their pushes.
      await healthy.waitFor(hasCluster(host), 10_000).catch((err: Error) => v.check(false, `healthy proxy, change ${i}: ${err.message}`));
      maxMs = Math.max(maxMs, performance.now() - c0);
    }
    await pause(300);
    const conns = srv.xds.connectionList().filter((c) => c.proxy.id.includes('~slow-'));
    const pendingPerStream = Math.max(0, ...conns.map((c) => c.pendingWrites()));
    const budget = srv.xds.writeBudget.stats();
    const heap1 = heapAfterGc();
    const rss1 = process.memoryUsage().rss;
    const readBefore = readers.slice(0, readersN).map((r) => r.received.length);
    v.check(pendingPerStream <= 1, `a slow stream holds ${pendingPerStream} responses`);
    // Resume: every slow reader ends on the newest config.
    const r0 = performance.now();
    for (const r of readers.slice(0, readersN)) r.resume();
    const last = await Promise.all(
      readers.slice(0, readersN).map((r) =>
        r.waitFor(hasCluster(host), 20_000).catch((err: Error) => {
          v.check(false, err.message);
          return undefined;
        }),
      ),
    );
    const resumeMs = performance.now() - r0;
    const newest = srv.xds.push().version;
    await pause(500);
    const versions = readers.slice(0, readersN).map((r) => r.received.findLast((x) => x.typeUrl === TYPE.CDS)?.versionInfo);
    v.check(
      versions.every((x) => x === newest),
      `resumed readers end on ${[...new Set(versions)].join(',')}, newest ${newest}`,
    );
    const readAfter = readers.slice(0, readersN).map((r, i) => r.received.length - (readBefore[i] ?? 0));
    v.check(
      last.every((x) => x !== undefined),
      'a resumed reader never saw the newest cluster',
    );
    const heapGrowthMiB = (heap1 - heap0) / MiB;
    return {
      cases: changes,
      seconds: (performance.now() - t0) / 1000,
      maxMs,
      rssGrowthMiB: (rss1 - rss0) / MiB,
      pendingPerStream,
      heapGrowthMiB,
      notes:
        `${readersN} readers stopped over ${changes} changes: heap after GC ${round1(heap0 / MiB)} → ${round1(heap1 / MiB)} MiB, ` +
        `≤${pendingPerStream} response waiting per stream (write budget ${round1(budget.used / 1024)} KiB held), healthy proxy converged each time (max ${Math.round(maxMs)} ms); ` +
        `resumed: newest version in ${Math.round(resumeMs)} ms after ≤${Math.max(...readAfter)} responses`,
      ...v.failure,
    };
  } finally {
    for (const r of readers) r.close();
    await srv.stop();
  }
}
