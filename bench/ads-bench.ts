/**
 * ADS load benchmark: S services, N simulated proxyless clients in a separate load-generator
 * process, against meshpilot started as a child process on loopback.
 *
 *   npx tsx bench/ads-bench.ts --services 100 --clients 500 [--delta]
 *
 * Measures: time until every client is synced (LDS → RDS → CDS → EDS, every response ACKed),
 * per-client convergence after one VirtualService file edit (file write → the RDS response that
 * contains the change) and after one WorkloadEntry edit (an endpoint change → the EDS response
 * with the new address), bytes received by the clients, meshpilot's CPU time per change, RSS.
 * `--delta` makes the simulated clients use Delta ADS instead of state of the world. Prints a table and writes
 * bench/results/ads-bench.json. Everything runs under a hard deadline and cleans up after itself.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { trackChild } from '../test/support/cleanup.js';
import { levelOf, startMeshpilot, type Meshpilot } from '../test/support/meshpilot-process.js';
import { dest, destinationRule, serviceEntry, virtualService, workloadEntry, type IstioDoc } from '../test/support/mesh-fixtures.js';
import { PARENT_WATCHDOG_URL, REPO_ROOT } from '../test/support/paths.js';
import { nowMs } from '../test/support/raw-ads-client.js';
import { tempDir } from '../test/support/temp-dir.js';
import { writeYaml } from '../test/support/yaml-files.js';
import type { ConvergedMsg, FromLoadGen, SyncedMsg, ToLoadGen } from './load-gen/protocol.js';

const { values: opt } = parseArgs({
  options: {
    services: { type: 'string', default: '100' },
    clients: { type: 'string', default: '500' },
    listenersPerClient: { type: 'string', default: '5' },
    endpoints: { type: 'string', default: '3' },
    syncTimeoutMs: { type: 'string', default: '180000' },
    convergeTimeoutMs: { type: 'string', default: '30000' },
    deadlineMs: { type: 'string', default: '600000' },
    env: { type: 'string', multiple: true, default: [] },
    out: { type: 'string', default: join(REPO_ROOT, 'bench/results/ads-bench.json') },
    quiet: { type: 'boolean', default: false },
    delta: { type: 'boolean', default: false },
  },
});

const S = positive('services', opt.services);
const N = positive('clients', opt.clients);
const K = Math.min(positive('listenersPerClient', opt.listenersPerClient), S);
const E = positive('endpoints', opt.endpoints);
const SYNC_TIMEOUT = positive('syncTimeoutMs', opt.syncTimeoutMs);
const CONVERGE_TIMEOUT = positive('convergeTimeoutMs', opt.convergeTimeoutMs);
const DEADLINE = positive('deadlineMs', opt.deadlineMs);
// The bench measures generation and push, not admission: like istiod's own load tests, lift the
// new-stream rate limit (default 15 + 5·cores per second) unless --env sets it.
const ENV: Record<string, string> = {
  PILOT_MAX_REQUESTS_PER_SECOND: '100000',
  ...Object.fromEntries(
    opt.env.map((kv) => {
      const i = kv.indexOf('=');
      if (i <= 0) throw new Error(`--env wants KEY=VALUE, got ${kv}`);
      return [kv.slice(0, i), kv.slice(i + 1)];
    }),
  ),
};

function positive(name: string, v: string): number {
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0) throw new Error(`--${name} must be a positive integer, got ${v}`);
  return n;
}

const log = (msg: string): void => {
  if (!opt.quiet) process.stderr.write(`[ads-bench] ${msg}\n`);
};

const svcName = (i: number): string => `svc-${String(i).padStart(3, '0')}`;
const hostOf = (i: number): string => `${svcName(i)}.default.svc.cluster.local`;
const listenerOf = (i: number): string => `${hostOf(i)}:8080`;

function serviceDocs(i: number, firstAddress?: string): IstioDoc[] {
  const app = svcName(i);
  const docs: IstioDoc[] = [serviceEntry(app, { host: hostOf(i), selector: { app } })];
  for (let e = 0; e < E; e++) {
    const address = e === 0 && firstAddress !== undefined ? { address: firstAddress } : {};
    docs.push(workloadEntry(`${app}-${e}`, { ...address, port: 20_000 + ((i * E + e) % 40_000), labels: { app, version: e % 2 === 0 ? 'v1' : 'v2' } }));
  }
  docs.push(destinationRule(app, { host: hostOf(i), subsets: { v1: { version: 'v1' }, v2: { version: 'v2' } } }));
  return docs;
}

function virtualServiceDoc(i: number, marker?: string): IstioDoc {
  const h = hostOf(i);
  const http: unknown[] = [];
  if (marker !== undefined) http.push({ match: [{ headers: { 'x-bench-change': { exact: marker } } }], route: [dest(h, 'v2')] });
  http.push({ route: [dest(h, 'v1', 90), dest(h, 'v2', 10)] });
  return virtualService(svcName(i), { hosts: [h], http });
}

/**
 * Listener subscriptions per client: every other client watches svc-000 (the one the bench
 * edits), the rest of each client's K listeners rotate over the other services.
 */
function plans(): string[][] {
  const out: string[][] = [];
  for (let c = 0; c < N; c++) {
    const set = new Set<string>();
    const watchesChanged = c % 2 === 0 || S === 1;
    if (watchesChanged) set.add(listenerOf(0));
    // Odd clients choose from the S-1 other services only.
    const size = Math.min(K, watchesChanged ? S : S - 1);
    for (let j = 0; set.size < size; j++) set.add(listenerOf(1 + ((c * K + j) % (S - 1))));
    out.push([...set]);
  }
  return out;
}

async function rssKiB(pid: number): Promise<{ rss: number; hwm: number } | undefined> {
  try {
    const s = await readFile(`/proc/${pid}/status`, 'utf8');
    const num = (k: string): number => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(s)?.[1] ?? NaN);
    return { rss: num('VmRSS'), hwm: num('VmHWM') };
  } catch {
    return undefined;
  }
}

/** utime + stime of a process in ms (from /proc; clock ticks assumed 100 Hz, as on Linux). */
async function cpuMs(pid: number): Promise<number> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * 10;
  } catch {
    return NaN;
  }
}

function pct(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] ?? NaN;
}

function stats(xs: readonly number[]): { n: number; p50: number; p99: number; max: number; min: number } {
  const s = [...xs].sort((a, b) => a - b);
  return { n: s.length, min: s[0] ?? NaN, p50: pct(s, 50), p99: pct(s, 99), max: s[s.length - 1] ?? NaN };
}

const mib = (b: number): string => `${(b / 1048576).toFixed(2)} MiB`;
const ms = (x: number): string => (Number.isFinite(x) ? `${x.toFixed(0)} ms` : 'n/a');
const kib2mib = (k: number | undefined): string => (k === undefined || !Number.isFinite(k) ? 'n/a' : `${(k / 1024).toFixed(0)} MiB`);

class LoadGen {
  readonly child: ChildProcess;
  private readonly waiters: { pred: (m: FromLoadGen) => boolean; resolve: (m: FromLoadGen) => void; reject: (e: Error) => void }[] = [];
  readonly exited: Promise<void>;

  constructor() {
    const entry = fileURLToPath(new URL('./load-gen/main.ts', import.meta.url));
    this.child = fork(entry, [], {
      cwd: REPO_ROOT,
      execArgv: ['--import', 'tsx', '--import', PARENT_WATCHDOG_URL],
      env: { ...process.env, MESHPILOT_PARENT_WATCHDOG: '1', LOAD_GEN_DEADLINE_MS: String(DEADLINE) },
      stdio: ['pipe', 'inherit', 'inherit', 'ipc'],
    });
    trackChild(this.child);
    this.child.on('message', (raw) => {
      const m = raw as FromLoadGen;
      if (m.type === 'progress') log(`synced ${m.synced}/${m.total}`);
      if (m.type === 'failed') for (const w of this.waiters.splice(0)) w.reject(new Error(`load generator failed: ${m.error}`));
      const i = this.waiters.findIndex((w) => w.pred(m));
      if (i >= 0) this.waiters.splice(i, 1)[0]?.resolve(m);
    });
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code, signal) => {
        for (const w of this.waiters.splice(0)) w.reject(new Error(`load generator exited (code ${code}, signal ${signal})`));
        resolve();
      }),
    );
  }

  send(m: ToLoadGen): void {
    this.child.send(m);
  }

  next<T extends FromLoadGen['type']>(type: T): Promise<Extract<FromLoadGen, { type: T }>> {
    return new Promise((resolve, reject) => {
      this.waiters.push({ pred: (m) => m.type === type, resolve: (m) => resolve(m as Extract<FromLoadGen, { type: T }>), reject });
    });
  }

  async stop(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    try {
      this.send({ type: 'stop' });
    } catch {
      /* channel gone */
    }
    const t = setTimeout(() => this.child.kill('SIGKILL'), 5000);
    await this.exited;
    clearTimeout(t);
  }
}

async function main(): Promise<void> {
  const dir = tempDir('meshpilot-bench-');
  let mp: Meshpilot | undefined;
  let lg: LoadGen | undefined;
  const levels: Record<string, number> = {};
  const deadline = setTimeout(() => {
    console.error(`[ads-bench] hard deadline of ${DEADLINE} ms reached; stopping`);
    void Promise.allSettled([lg?.stop(), mp?.stop(2000)]).finally(() => process.exit(1));
  }, DEADLINE);
  try {
    log(`writing ${S} services (${E} endpoints each) to ${dir.path}`);
    for (let i = 0; i < S; i++) {
      await writeYaml(dir.path, `${svcName(i)}.yaml`, serviceDocs(i));
      await writeYaml(dir.path, `${svcName(i)}-vs.yaml`, [virtualServiceDoc(i)]);
    }

    const t0 = nowMs();
    mp = await startMeshpilot({
      configDir: dir.path,
      env: ENV,
      retainLines: false,
      readyTimeoutMs: 60_000,
      onLine: (l) => {
        const lv = levelOf(l) ?? 'unstructured';
        levels[lv] = (levels[lv] ?? 0) + 1;
      },
    });
    const readyMs = nowMs() - t0;
    const rssReady = await rssKiB(mp.pid);
    log(`meshpilot ready in ${ms(readyMs)} (pid ${mp.pid}, ADS ${mp.grpcAddr})`);

    let peakSampled = rssReady?.rss ?? 0;
    const pid = mp.pid;
    const sampler = setInterval(() => {
      void rssKiB(pid).then((r) => {
        if (r && r.rss > peakSampled) peakSampled = r.rss;
      });
    }, 250);

    lg = new LoadGen();
    const p = plans();
    const watchers = p.filter((x) => x.includes(listenerOf(0))).length;
    log(`starting ${N} simulated clients (${K} listeners each; ${watchers} watch ${listenerOf(0)})`);
    const syncedP = lg.next('synced');
    lg.send({ type: 'start', addr: mp.grpcAddr, plans: p, syncTimeoutMs: SYNC_TIMEOUT, delta: opt.delta });
    const synced: SyncedMsg = await syncedP;
    const allSyncedMs = synced.lastSyncedAt - synced.startedAt;
    const rssSynced = await rssKiB(mp.pid);
    log(`synced ${synced.synced}/${synced.total} in ${ms(allSyncedMs)}`);
    if (!synced.complete) log(`WARNING: not every client synced within ${SYNC_TIMEOUT} ms`);

    // Let anything still in flight from the initial connect storm land.
    await new Promise((r) => setTimeout(r, 1000));

    const mpPid = mp.pid;
    const loadGen = lg;
    const measure = async (label: string, marker: string, where: 'rds' | 'eds', edit: () => Promise<unknown>) => {
      const watchingP = loadGen.next('watching');
      loadGen.send({ type: 'watch', marker, in: where, listener: listenerOf(0), timeoutMs: CONVERGE_TIMEOUT });
      await watchingP;
      const convergedP = loadGen.next('converged');
      const cpuBefore = await cpuMs(mpPid);
      const writtenAt = nowMs();
      await edit();
      const converged: ConvergedMsg = await convergedP;
      const cpuAfter = await cpuMs(mpPid);
      const latencies = converged.arrivals.filter((a): a is number => a !== null).map((a) => a - writtenAt);
      return {
        label,
        service: hostOf(0),
        watchers: converged.arrivals.length,
        converged: latencies.length,
        complete: converged.complete,
        convergenceMs: roundStats(stats(latencies)),
        meshpilotCpuMs: round(cpuAfter - cpuBefore),
        bytesReceived: converged.bytes,
        watcherResponses: converged.watcherResponses,
        otherClients: converged.otherProxies,
        otherResponses: converged.otherResponses,
      };
    };
    const vsMarker = `bench-change-${randomBytes(6).toString('hex')}`;
    const vsChange = await measure(`VirtualService edit (${hostOf(0)})`, vsMarker, 'rds', () => writeYaml(dir.path, `${svcName(0)}-vs.yaml`, [virtualServiceDoc(0, vsMarker)]));
    await new Promise((r) => setTimeout(r, 1000));
    const newAddress = '127.0.0.99';
    const epChange = await measure(`WorkloadEntry edit (${svcName(0)}-0 address)`, newAddress, 'eds', () => writeYaml(dir.path, `${svcName(0)}.yaml`, serviceDocs(0, newAddress)));
    const rssAfter = await rssKiB(mp.pid);
    clearInterval(sampler);
    const lgRss = lg.child.pid !== undefined ? await rssKiB(lg.child.pid) : undefined;
    const metrics = await scrapeMetrics(mp.monitoringAddr);
    const alive = mp.alive();

    const syncStats = stats(synced.syncMs.filter((x): x is number => x !== null));
    const result = {
      date: new Date().toISOString(),
      machine: { cpus: availableParallelism(), node: process.version },
      params: { services: S, clients: N, listenersPerClient: K, endpointsPerService: E, env: ENV, protocol: opt.delta ? 'delta' : 'sotw' },
      meshpilot: {
        readyMs: round(readyMs),
        aliveAtEnd: alive,
        rssKiB: { ready: rssReady?.rss, synced: rssSynced?.rss, afterChange: rssAfter?.rss, peakSampled, hwm: rssAfter?.hwm },
        logLines: levels,
        metrics,
      },
      sync: {
        complete: synced.complete,
        synced: synced.synced,
        total: synced.total,
        allSyncedMs: round(allSyncedMs),
        perClientMs: roundStats(syncStats),
        bytesReceived: synced.bytes,
        responses: synced.responses,
        reconnects: synced.reconnects,
        streamErrors: synced.streamErrors,
      },
      change: vsChange,
      endpointChange: epChange,
      loadGen: { rssKiB: lgRss?.rss, hwmKiB: lgRss?.hwm },
    };
    await mkdir(dirname(opt.out), { recursive: true });
    await writeFile(opt.out, JSON.stringify(result, null, 2) + '\n');
    printTable(result);
    console.log(`\nJSON: ${opt.out}`);
    if (!synced.complete || !vsChange.complete || !epChange.complete || !alive) process.exitCode = 1;
  } finally {
    clearTimeout(deadline);
    await lg?.stop();
    await mp?.stop();
    await dir.remove();
  }
}

function round(x: number): number {
  return Math.round(x * 10) / 10;
}

function roundStats(s: ReturnType<typeof stats>): ReturnType<typeof stats> {
  return { n: s.n, min: round(s.min), p50: round(s.p50), p99: round(s.p99), max: round(s.max) };
}

const METRICS_OF_INTEREST = ['pilot_xds', 'pilot_xds_pushes', 'pilot_total_xds_rejects', 'pilot_xds_push_time_count', 'pilot_proxy_convergence_time_count', 'pilot_proxy_convergence_time_sum', 'pilot_inbound_updates', 'pilot_services'];

async function scrapeMetrics(addr: string): Promise<Record<string, number> | string> {
  try {
    const res = await fetch(`http://${addr}/metrics`, { signal: AbortSignal.timeout(3000) });
    if (res.status !== 200) return `GET /metrics: ${res.status}`;
    const out: Record<string, number> = {};
    for (const line of (await res.text()).split('\n')) {
      if (line.startsWith('#') || line.trim() === '') continue;
      const name = line.slice(0, line.search(/[{ ]/));
      if (!METRICS_OF_INTEREST.includes(name)) continue;
      const series = line.slice(0, line.lastIndexOf(' '));
      out[series] = Number(line.slice(line.lastIndexOf(' ') + 1));
    }
    return out;
  } catch (err) {
    return `GET /metrics failed: ${(err as Error).message}`;
  }
}

type Change = {
  label: string; service: string; watchers: number; converged: number; convergenceMs: ReturnType<typeof stats>; meshpilotCpuMs: number;
  bytesReceived: number; watcherResponses: Readonly<Record<string, number>>; otherClients: number; otherResponses: Readonly<Record<string, number>>;
};

type Result = {
  params: { services: number; clients: number; listenersPerClient: number; endpointsPerService: number; protocol: string };
  machine: { cpus: number; node: string };
  meshpilot: { readyMs: number; aliveAtEnd: boolean; rssKiB: Record<string, number | undefined>; logLines: Record<string, number> };
  sync: {
    complete: boolean; synced: number; total: number; allSyncedMs: number; perClientMs: ReturnType<typeof stats>;
    bytesReceived: number; responses: Readonly<Record<string, number>>; reconnects: number; streamErrors: Readonly<Record<string, number>>;
  };
  change: Change;
  endpointChange: Change;
  loadGen: { rssKiB: number | undefined; hwmKiB: number | undefined };
};

function printTable(r: Result): void {
  const rows: [string, string][] = [];
  const fmtCounts = (c: Readonly<Record<string, number>>): string =>
    Object.keys(c).length === 0 ? 'none' : Object.entries(c).map(([k, v]) => `${k} ${v}`).join(', ');
  rows.push(['meshpilot ready (config loaded)', ms(r.meshpilot.readyMs)]);
  rows.push(['all clients synced (LDS→RDS→CDS→EDS)', `${ms(r.sync.allSyncedMs)}  (${r.sync.synced}/${r.sync.total} clients)`]);
  rows.push(['  per-client sync p50 / p99 / max', `${ms(r.sync.perClientMs.p50)} / ${ms(r.sync.perClientMs.p99)} / ${ms(r.sync.perClientMs.max)}`]);
  rows.push(['  reconnects / stream errors', `${r.sync.reconnects} / ${fmtCounts(r.sync.streamErrors)}`]);
  rows.push(['  bytes received, all clients', mib(r.sync.bytesReceived)]);
  rows.push(['  responses', fmtCounts(r.sync.responses)]);
  for (const c of [r.change, r.endpointChange]) {
    rows.push([c.label, `${c.converged}/${c.watchers} watching clients converged`]);
    rows.push(['  convergence p50 / p99 / max', `${ms(c.convergenceMs.p50)} / ${ms(c.convergenceMs.p99)} / ${ms(c.convergenceMs.max)}`]);
    rows.push(['  meshpilot CPU time (user+sys)', ms(c.meshpilotCpuMs)]);
    rows.push(['  bytes received, all clients', mib(c.bytesReceived)]);
    rows.push(['  responses to watching clients', fmtCounts(c.watcherResponses)]);
    rows.push([`  responses to the ${c.otherClients} other clients`, fmtCounts(c.otherResponses)]);
  }
  const rss = r.meshpilot.rssKiB;
  rows.push(['meshpilot RSS ready / synced / after edit', `${kib2mib(rss.ready)} / ${kib2mib(rss.synced)} / ${kib2mib(rss.afterChange)}`]);
  rows.push(['meshpilot RSS peak (VmHWM)', kib2mib(rss.hwm)]);
  rows.push(['meshpilot log lines by level', fmtCounts(r.meshpilot.logLines)]);
  rows.push(['load generator RSS (VmHWM)', `${kib2mib(r.loadGen.rssKiB)} (${kib2mib(r.loadGen.hwmKiB)})`]);
  const w = Math.max(...rows.map(([k]) => k.length));
  console.log(
    `\nmeshpilot ADS bench (${r.params.protocol}): ${r.params.services} services × ${r.params.clients} clients ` +
      `(${r.params.listenersPerClient} listeners/client, ${r.params.endpointsPerService} endpoints/service; ` +
      `${r.machine.cpus} CPUs, Node ${r.machine.node})`,
  );
  console.log('─'.repeat(w + 40));
  for (const [k, v] of rows) console.log(`${k.padEnd(w)}  ${v}`);
}

main().catch((err: unknown) => {
  console.error(`[ads-bench] failed: ${(err as Error).stack ?? String(err)}`);
  process.exitCode = 1;
});
