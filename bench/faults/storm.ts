/**
 * Reconnect storm: `proxies` simulated sidecars open their streams at once
 * against meshpilot at its default admission rate. Every stream waits its turn (FIFO) instead of
 * being refused, so the figure is the time until all are synced and how many streams were
 * refused (RESOURCE_EXHAUSTED) — istiod refuses every stream that would wait over 1 s.
 */
import { LoadGenPool } from '../lib/load-gen-pool.js';
import { memKiB } from '../lib/proc.js';
import { stats } from '../lib/stats.js';
import { Violations, type FaultFigures } from '../../test/support/faults/figures.js';
import { meshDir, sidecarPlans, startOn, type MeshpilotRun } from './mesh-process.js';

export interface StormOptions extends MeshpilotRun {
  readonly proxies?: number;
  readonly loadGens?: number;
  readonly syncTimeoutMs?: number;
}

export async function stormScenario(o: StormOptions = {}): Promise<FaultFigures> {
  const n = o.proxies ?? 2000;
  const t0 = performance.now();
  const v = new Violations();
  const dir = await meshDir();
  const mp = await startOn(dir, o);
  const pool = new LoadGenPool(o.loadGens ?? 2, 30 * 60_000);
  try {
    const rss0 = (await memKiB(mp.pid))?.rss ?? 0;
    const synced = await pool.start({
      addr: mp.grpcAddr,
      proxies: sidecarPlans(n),
      syncTimeoutMs: o.syncTimeoutMs ?? 300_000,
      delta: false,
      connectBatch: n,
    });
    const rss1 = (await memKiB(mp.pid))?.rss ?? 0;
    const refused = Object.entries(synced.streamErrors)
      .filter(([k]) => k.startsWith('8 '))
      .reduce((a, [, c]) => a + c, 0);
    const otherErrors = Object.entries(synced.streamErrors).filter(([k]) => !k.startsWith('8 '));
    const allMs = synced.lastSyncedAt - synced.startedAt;
    const per = stats(synced.syncMs.filter((x): x is number => x !== null));
    v.check(synced.complete && synced.synced === n, `${synced.synced}/${n} synced`);
    v.check(refused === 0, `${refused} streams refused with RESOURCE_EXHAUSTED`);
    v.check(otherErrors.length === 0, `stream errors ${JSON.stringify(Object.fromEntries(otherErrors))}`);
    return {
      cases: synced.synced,
      seconds: (performance.now() - t0) / 1000,
      maxMs: allMs,
      rssGrowthMiB: (rss1 - rss0) / 1024,
      notes:
        `${n} sidecars at once: ${synced.synced} synced, all in ${(allMs / 1000).toFixed(1)} s (p50 ${(per.p50 / 1000).toFixed(1)} s, p99 ${(per.p99 / 1000).toFixed(1)} s), ` +
        `${refused} refused, ${synced.reconnects} reconnects${o.args?.length ? ` (${o.args.join(' ')})` : ' (default admission rate)'}`,
      ...v.failure,
    };
  } finally {
    await pool.stop();
    await mp.stop();
    await dir.remove();
  }
}
