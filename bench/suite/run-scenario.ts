/**
 * One suite run: writes a scenario's config, starts meshpilot and the load generator(s), waits for
 * the first full sync, then runs the churn steps one after another, each measured after a quiet
 * period. Everything runs under a hard deadline and is stopped and removed afterwards.
 */
import type { IstioDoc } from '../../test/support/mesh-fixtures.js';
import { levelOf, startMeshpilot, type Meshpilot } from '../../test/support/meshpilot-process.js';
import { nowMs } from '../../test/support/raw-ads-client.js';
import { tempDir } from '../../test/support/temp-dir.js';
import { removeFile, writeYaml } from '../../test/support/yaml-files.js';
import { LoadGenPool } from '../lib/load-gen-pool.js';
import { heapMiB, planMsBetween, pushesByType, scrapeMetrics } from '../lib/metrics.js';
import { cpuMs, machineBusyMs, memKiB, waitIdle, writtenBytes, type MemKiB } from '../lib/proc.js';
import { diffCounts, round, stats, type Stats } from '../lib/stats.js';
import type { ProxyKind } from '../load-gen/protocol.js';
import { Mesh, type MeshSize } from './mesh.js';
import { scenarioFiles, scenarioProxies, type FileWrite, type Scenario, type StepPlan } from './scenario.js';
import { scenarioSteps, type RestartOptions, type StepName } from './steps.js';

export interface RunOptions {
  readonly protocol: 'sotw' | 'delta';
  readonly env: Readonly<Record<string, string>>;
  readonly loadGens: number;
  readonly syncTimeoutMs: number;
  readonly convergeTimeoutMs: number;
  /** A step ends once nothing arrived for quietMs, and not before minSettleMs after its last write. */
  readonly quietMs: number;
  readonly minSettleMs: number;
  readonly deadlineMs: number;
  /** Abort the run when meshpilot and the load generators together exceed this RSS. */
  readonly maxRssMiB: number;
  readonly steps: ReadonlySet<StepName>;
  readonly restart: RestartOptions;
  readonly log: (msg: string) => void;
  /** Run this built entry point with plain node (--dist) instead of the source under tsx. */
  readonly cliJs?: string;
}

export interface StepResult {
  readonly name: string;
  readonly label: string;
  readonly writes: number;
  /** Proxies expected to see the change (from what they held when it was written) / converged. */
  readonly expected: number;
  readonly converged: number;
  readonly complete: boolean;
  /** From the (last) file write to the response that made each expected proxy converge. */
  readonly convergenceMs: Stats;
  /** The rolling restart: from the first write. */
  readonly fromFirstWriteMs?: Stats;
  readonly rolloutMs?: number;
  readonly expectedReached: number;
  readonly expectedResponses: Readonly<Record<string, number>>;
  /** Proxies not expected to see anything / how many received something anyway, by kind. */
  readonly others: number;
  readonly othersReached: number;
  readonly othersReachedByKind: Readonly<Record<string, number>>;
  readonly othersResponses: Readonly<Record<string, number>>;
  /** Responses (to anyone) that changed nothing the proxy held: the same resources sent again. */
  readonly noopResponses: number;
  /** Message bytes the clients received in the step / bytes meshpilot wrote (sockets + logs, /proc wchar). */
  readonly bytesToClients: number;
  readonly meshpilotWroteBytes: number;
  readonly meshpilotCpuMs: number;
  /** Of that, deciding the push (meshpilot_push_plan_seconds): change set, invalidation, PushContext, choosing proxies. */
  readonly planMs?: number;
  readonly pushes: Readonly<Record<string, number>>;
  readonly idleBefore: { readonly waitedMs: number; readonly idle: boolean };
}

export interface ScenarioResult {
  readonly scenario: string;
  readonly about: string;
  readonly protocol: 'sotw' | 'delta';
  readonly size: MeshSize;
  readonly proxies: Readonly<Record<ProxyKind | 'total', number>>;
  readonly configObjects: number;
  readonly wallMs: number;
  readonly error?: string;
  readonly meshpilot?: {
    readonly readyMs: number;
    readonly aliveAtEnd: boolean;
    readonly beforeClientsKiB: MemKiB | undefined;
    readonly syncedKiB: MemKiB | undefined;
    /** meshpilot's /debug/memz after sync: what of the RSS is V8 heap (used/total), external, array buffers. */
    readonly syncedHeapMiB: Record<string, number> | string;
    readonly endKiB: MemKiB | undefined;
    /** (RSS after sync − RSS before the clients) / proxies. */
    readonly rssPerProxyKiB: number;
    readonly syncCpuMs: number;
    readonly logLines: Readonly<Record<string, number>>;
    readonly notableLines: readonly string[];
    readonly metrics: Record<string, number> | string;
  };
  readonly sync?: {
    readonly complete: boolean;
    readonly synced: number;
    readonly total: number;
    /** Until the last proxy synced, from the load generator's start. */
    readonly allMs: number;
    readonly perProxyMs: Stats;
    /** From each proxy's own stream opening. */
    readonly ownStreamMs: Stats;
    readonly bytes: number;
    readonly responses: Readonly<Record<string, number>>;
    readonly reconnects: number;
    readonly streamErrors: Readonly<Record<string, number>>;
    readonly distinctResources: number;
    /** CPU the load generators used until synced (if close to the sync time × processes, they were the bottleneck). */
    readonly loadGenCpuMs: number;
  };
  readonly steps: StepResult[];
  /** Highest RSS seen by sampling every 500 ms (meshpilot; all load generators together). */
  readonly peakSampledKiB: { readonly meshpilot: number; readonly loadGens: number };
  readonly loadGen?: { readonly pids: number; readonly mem: (MemKiB | undefined)[] };
  /** CPU the rest of the machine used during the run (not meshpilot, the load generators or the suite). */
  readonly otherCpuMs?: number;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function writeFiles(dir: string, writes: readonly FileWrite[]): Promise<void> {
  for (const w of writes) {
    if (w.docs === null) await removeFile(dir, w.file);
    else await writeYaml(dir, w.file, w.docs);
  }
}

export async function runScenario(s: Scenario, size: MeshSize, o: RunOptions): Promise<ScenarioResult> {
  const t0 = nowMs();
  const mesh = new Mesh(size, s.ports);
  const files = scenarioFiles(s, mesh);
  const proxies = scenarioProxies(s, mesh);
  const count = (k: ProxyKind): number => proxies.filter((p) => p.kind === k).length;
  const base = {
    scenario: s.name,
    about: s.about,
    protocol: o.protocol,
    size,
    proxies: { sidecar: count('sidecar'), proxyless: count('proxyless'), router: count('router'), total: proxies.length },
    configObjects: [...files.values()].reduce((a, d) => a + d.length, 0),
  };
  const steps: StepResult[] = [];
  const partial: { -readonly [K in 'meshpilot' | 'sync' | 'loadGen' | 'otherCpuMs']?: ScenarioResult[K] } = {};
  const dir = tempDir('meshpilot-suite-');
  let mp: Meshpilot | undefined;
  let pool: LoadGenPool | undefined;
  const levels: Record<string, number> = {};
  /** The first lines meshpilot logged above info (or not as JSON). */
  const notable: string[] = [];
  const peak = { meshpilot: 0, loadGens: 0 };
  const body = async (): Promise<void> => {
    o.log(`${s.name}/${o.protocol}: writing ${base.configObjects} objects in ${files.size} files`);
    const busy0 = await machineBusyMs();
    const own0 = process.cpuUsage();
    for (const [f, docs] of files) await writeYaml(dir.path, f, docs as IstioDoc[]);
    const tStart = nowMs();
    mp = await startMeshpilot({
      configDir: dir.path,
      env: { ...o.env },
      retainLines: false,
      readyTimeoutMs: 120_000,
      ...(o.cliJs !== undefined ? { cliJs: o.cliJs } : {}),
      onLine: (l) => {
        const lv = levelOf(l) ?? 'unstructured';
        levels[lv] = (levels[lv] ?? 0) + 1;
        if (lv !== 'info' && lv !== 'debug' && notable.length < 10) notable.push(l.raw.slice(0, 300));
      },
    });
    const readyMs = nowMs() - tStart;
    const m = mp;
    await waitIdle([m.pid], { maxWaitMs: 10_000 });
    const beforeClientsKiB = await memKiB(m.pid);
    o.log(
      `${s.name}/${o.protocol}: meshpilot ready in ${readyMs.toFixed(0)} ms; starting ${proxies.length} proxies (${JSON.stringify(base.proxies)})`,
    );
    pool = new LoadGenPool(o.loadGens, o.deadlineMs);
    const lg = pool;
    const cpu0 = await cpuMs(m.pid);
    const lgCpu = async (): Promise<number> => (await Promise.all(lg.pids.map(cpuMs))).reduce((a, b) => a + b, 0);
    const lgCpu0 = await lgCpu();
    const progress = setInterval(() => o.log(`  synced ${lg.progress}/${proxies.length}`), 5000);
    const synced = await lg
      .start({ addr: m.grpcAddr, proxies, syncTimeoutMs: o.syncTimeoutMs, delta: o.protocol === 'delta' })
      .finally(() => clearInterval(progress));
    const syncCpuMs = (await cpuMs(m.pid)) - cpu0;
    const loadGenCpuMs = (await lgCpu()) - lgCpu0;
    o.log(`${s.name}/${o.protocol}: synced ${synced.synced}/${synced.total} in ${(synced.lastSyncedAt - synced.startedAt).toFixed(0)} ms`);
    await waitIdle([m.pid, ...lg.pids], { maxWaitMs: 10_000 });
    const syncedKiB = await memKiB(m.pid);
    const syncedHeapMiB = await heapMiB(m.monitoringAddr);
    o.log(
      `${s.name}/${o.protocol}: after sync RSS ${((syncedKiB?.rss ?? NaN) / 1024).toFixed(0)} MiB; V8 ${JSON.stringify(syncedHeapMiB)} MiB`,
    );
    const defined = (xs: readonly (number | null)[]): number[] => xs.filter((x): x is number => x !== null);
    partial.sync = {
      complete: synced.complete,
      synced: synced.synced,
      total: synced.total,
      allMs: round(synced.lastSyncedAt - synced.startedAt),
      perProxyMs: stats(defined(synced.syncMs)),
      ownStreamMs: stats(defined(synced.ownSyncMs)),
      bytes: synced.bytes,
      responses: synced.responses,
      reconnects: synced.reconnects,
      streamErrors: synced.streamErrors,
      distinctResources: synced.distinctResources,
      loadGenCpuMs,
    };
    const meshpilotPart = {
      readyMs: round(readyMs),
      beforeClientsKiB,
      syncedKiB,
      syncedHeapMiB,
      syncCpuMs,
      rssPerProxyKiB: round(((syncedKiB?.rss ?? NaN) - (beforeClientsKiB?.rss ?? NaN)) / Math.max(1, proxies.length)),
    };
    partial.meshpilot = {
      ...meshpilotPart,
      aliveAtEnd: m.alive(),
      endKiB: syncedKiB,
      logLines: levels,
      notableLines: notable,
      metrics: {},
    };
    for (const step of scenarioSteps(s, mesh, o.steps, o.restart)) {
      steps.push(await runStep(step, dir.path, m, lg, o));
      const last = steps[steps.length - 1];
      o.log(
        `  ${step.label}: ${last?.converged}/${last?.expected} converged, p99 ${last?.convergenceMs.p99} ms, others reached ${last?.othersReached}/${last?.others}`,
      );
    }
    partial.meshpilot = {
      ...meshpilotPart,
      aliveAtEnd: m.alive(),
      endKiB: await memKiB(m.pid),
      logLines: levels,
      notableLines: notable,
      metrics: await scrapeMetrics(m.monitoringAddr),
    };
    partial.loadGen = { pids: lg.pids.length, mem: await Promise.all(lg.pids.map(memKiB)) };
    // Whatever else ran on the machine meanwhile (wall-clock figures suffer when this is large).
    const own = process.cpuUsage(own0);
    const ours = (await cpuMs(m.pid)) + (await lgCpu()) + (own.user + own.system) / 1000;
    partial.otherCpuMs = round((await machineBusyMs()) - busy0 - ours);
  };
  let error: string | undefined;
  const guard = runGuard(
    o,
    () => ({ meshpilot: (mp as Meshpilot | undefined)?.pid, loadGens: (pool as LoadGenPool | undefined)?.pids ?? [] }),
    peak,
  );
  try {
    const run = body();
    run.catch(() => {});
    await Promise.race([run, guard.tripped]);
  } catch (err) {
    const lg = pool as LoadGenPool | undefined;
    error = `${(err as Error).message}${lg && !partial.sync ? ` (during the first sync: ${lg.progress}/${proxies.length} proxies synced)` : ''}`;
    o.log(`${s.name}/${o.protocol}: FAILED: ${error}${mp ? `\n--- meshpilot stderr tail ---\n${(mp as Meshpilot).tail(8)}` : ''}`);
  } finally {
    guard.stop();
    await (pool as LoadGenPool | undefined)?.stop();
    await (mp as Meshpilot | undefined)?.stop();
    await dir.remove();
  }
  return { ...base, wallMs: round(nowMs() - t0), ...(error !== undefined ? { error } : {}), ...partial, peakSampledKiB: peak, steps };
}

/**
 * Rejects `tripped` at the run's deadline, or when meshpilot and the load generators together hold
 * more memory than the cap (a control plane without backpressure can take the machine down);
 * samples their RSS every 500 ms for the peaks.
 */
function runGuard(
  o: RunOptions,
  pids: () => { meshpilot: number | undefined; loadGens: readonly number[] },
  peak: { meshpilot: number; loadGens: number },
): { tripped: Promise<never>; stop(): void } {
  let timer: NodeJS.Timeout | undefined;
  let sampler: NodeJS.Timeout | undefined;
  const tripped = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`run deadline of ${o.deadlineMs} ms reached`)), o.deadlineMs);
    sampler = setInterval(() => {
      const p = pids();
      void Promise.all([p.meshpilot !== undefined ? memKiB(p.meshpilot) : undefined, ...p.loadGens.map(memKiB)]).then(
        ([mpMem, ...lgMem]) => {
          const mpRss = mpMem?.rss ?? 0;
          const lgRss = lgMem.reduce((a, m) => a + (m?.rss ?? 0), 0);
          peak.meshpilot = Math.max(peak.meshpilot, mpRss);
          peak.loadGens = Math.max(peak.loadGens, lgRss);
          if (mpRss + lgRss > o.maxRssMiB * 1024) {
            reject(
              new Error(
                `RSS cap of ${o.maxRssMiB} MiB exceeded: meshpilot ${Math.round(mpRss / 1024)} MiB, load generators ${Math.round(lgRss / 1024)} MiB`,
              ),
            );
          }
        },
      );
    }, 500);
  });
  tripped.catch(() => {});
  return {
    tripped,
    stop: () => {
      clearTimeout(timer);
      clearInterval(sampler);
    },
  };
}

async function runStep(step: StepPlan, dir: string, mp: Meshpilot, lg: LoadGenPool, o: RunOptions): Promise<StepResult> {
  const idleBefore = await waitIdle([mp.pid, ...lg.pids], { maxWaitMs: 5000 });
  const [metrics0, cpu0, wrote0] = await Promise.all([scrapeMetrics(mp.monitoringAddr), cpuMs(mp.pid), writtenBytes(mp.pid)]);
  const expected = await lg.watch({
    expect: step.expect,
    until: step.until,
    timeoutMs: o.convergeTimeoutMs,
    quietMs: o.quietMs,
    minSettleMs: o.minSettleMs,
  });
  const firstWriteAt = nowMs();
  let lastWriteAt = firstWriteAt;
  for (const [i, batch] of step.batches.entries()) {
    if (i > 0) await sleep(step.intervalMs);
    lastWriteAt = nowMs();
    await writeFiles(dir, batch);
  }
  const c = await lg.written(lastWriteAt);
  const [metrics1, cpu1, wrote1] = await Promise.all([scrapeMetrics(mp.monitoringAddr), cpuMs(mp.pid), writtenBytes(mp.pid)]);
  const planMs = planMsBetween(metrics0, metrics1);
  const arrived = c.arrivals.filter((a): a is number => a !== null);
  const multi = step.batches.length > 1;
  return {
    name: step.name,
    label: step.label,
    writes: step.batches.length,
    expected,
    converged: arrived.length,
    complete: c.complete,
    convergenceMs: stats(arrived.map((a) => a - lastWriteAt)),
    ...(multi ? { fromFirstWriteMs: stats(arrived.map((a) => a - firstWriteAt)), rolloutMs: round(lastWriteAt - firstWriteAt) } : {}),
    expectedReached: c.expected.reached,
    expectedResponses: c.expected.responses,
    others: c.others.proxies,
    othersReached: c.others.reached,
    othersReachedByKind: c.othersReachedByKind,
    othersResponses: c.others.responses,
    noopResponses: c.expected.noopResponses + c.others.noopResponses,
    bytesToClients: c.expected.bytes + c.others.bytes,
    meshpilotWroteBytes: wrote1 - wrote0,
    meshpilotCpuMs: cpu1 - cpu0,
    ...(planMs !== undefined ? { planMs } : {}),
    pushes: diffCounts(pushesByType(metrics1), pushesByType(metrics0)),
    idleBefore,
  };
}
