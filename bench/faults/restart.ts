/**
 * SIGKILL and restart: `proxies` simulated sidecars are synced; meshpilot is
 * killed with SIGKILL and started again on the same port. The figure is the time from the new
 * process being ready (/ready 200) until every proxy is connected to it and has been answered
 * on each of its four types (pilot_xds and pilot_xds_pushes of the new process). Proxies come
 * back on their own backoff schedule, so the bound is 2 s plus the step of that schedule that
 * spans the outage (test/e2e/faults-restart.test.ts holds the server to 2 s with clients that
 * retry every 200 ms).
 */
import { LoadGenPool } from '../lib/load-gen-pool.js';
import { freePorts } from '../../test/support/ports.js';
import { waitFor } from '../../test/support/wait.js';
import { Violations, type FaultFigures } from '../../test/support/faults/figures.js';
import { meshDir, sidecarPlans, startOn, xdsCounts, type MeshpilotRun } from './mesh-process.js';

export interface RestartOptions extends MeshpilotRun {
  readonly proxies?: number;
  /** The property: resynced within this long of the new process being ready (default 2 s). */
  readonly withinMs?: number;
}

/** Sidecars ask for CDS, EDS, LDS and RDS. */
const TYPES_PER_SIDECAR = 4;

/**
 * The longest a load-generator proxy may still sleep in its backoff (bench/load-gen backoffMs:
 * 1 s ×1.6, +20% jitter, capped at 10 s) when the server comes back `outageMs` after the kill:
 * the step of its schedule that spans that moment. Time no server can save.
 */
export function backoffGapMs(outageMs: number): number {
  let t = 0;
  for (let k = 0; ; k++) {
    const step = Math.min(1000 * 1.6 ** k, 10_000) * 1.2;
    if (t + step >= outageMs) return step;
    t += Math.min(1000 * 1.6 ** k, 10_000) * 0.8;
  }
}

export async function restartScenario(o: RestartOptions = {}): Promise<FaultFigures> {
  const n = o.proxies ?? 200;
  const withinMs = o.withinMs ?? 2000;
  const t0 = performance.now();
  const v = new Violations();
  const dir = await meshDir();
  const [port] = await freePorts(1);
  const addr = ['--grpcAddr', `127.0.0.1:${port}`];
  const first = await startOn(dir, o, addr);
  let second: Awaited<ReturnType<typeof startOn>> | undefined;
  const pool = new LoadGenPool(1, 10 * 60_000);
  try {
    const synced = await pool.start({ addr: `127.0.0.1:${port}`, proxies: sidecarPlans(n), syncTimeoutMs: 120_000, delta: false });
    v.check(synced.complete, `${synced.synced}/${n} synced before the kill`);
    const killedAt = performance.now();
    process.kill(first.pid, 'SIGKILL');
    await first.exited;
    second = await startOn(dir, o, addr);
    const readyAt = performance.now();
    const mp = second;
    let last = { connected: 0, responses: 0 };
    await waitFor(
      async () => {
        last = await xdsCounts(mp);
        return last.connected >= n && last.responses >= n * TYPES_PER_SIDECAR;
      },
      { timeoutMs: 60_000, intervalMs: 50, description: `${n} proxies resynced to the new process` },
    ).catch((err: Error) => v.check(false, `${err.message} (${JSON.stringify(last)})`));
    const resyncMs = performance.now() - readyAt;
    const gap = backoffGapMs(readyAt - killedAt);
    v.check(
      resyncMs <= withinMs + gap,
      `resynced ${Math.round(resyncMs)} ms after ready (bound ${withinMs} ms + the clients' backoff step ${Math.round(gap)} ms)`,
    );
    return {
      cases: n,
      seconds: (performance.now() - t0) / 1000,
      maxMs: resyncMs,
      rssGrowthMiB: 0,
      notes: `${n} sidecars: SIGKILL → new process ready in ${Math.round(readyAt - killedAt)} ms → all ${last.connected} reconnected and answered (${last.responses} responses) ${Math.round(resyncMs)} ms after ready (their backoff step then: up to ${Math.round(gap)} ms)`,
      ...v.failure,
    };
  } finally {
    await pool.stop();
    await second?.stop();
    if (first.alive()) await first.stop();
    await dir.remove();
  }
}
