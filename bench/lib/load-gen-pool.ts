/**
 * The bench side of the load generators: forks one or more bench/load-gen/main.ts processes,
 * splits the simulated proxies between them, and merges what they report.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { trackChild } from '../../test/support/cleanup.js';
import { PARENT_WATCHDOG_URL, REPO_ROOT } from '../../test/support/paths.js';
import type { ConvergedMsg, FromLoadGen, GroupReach, ProxyPlan, SyncedMsg, ToLoadGen, WatchMsg } from '../load-gen/protocol.js';
import { addCounts } from './stats.js';

type Waiter = { pred: (m: FromLoadGen) => boolean; resolve: (m: FromLoadGen) => void; reject: (e: Error) => void };

class LoadGen {
  readonly child: ChildProcess;
  private readonly waiters: Waiter[] = [];
  readonly exited: Promise<void>;
  synced = 0;

  constructor(deadlineMs: number) {
    const entry = fileURLToPath(new URL('../load-gen/main.ts', import.meta.url));
    this.child = fork(entry, [], {
      cwd: REPO_ROOT,
      execArgv: [
        '--import',
        'tsx',
        '--import',
        PARENT_WATCHDOG_URL,
        ...(process.env.LOAD_GEN_NODE_ARGS ?? '').split(' ').filter((a) => a !== ''),
      ],
      env: { ...process.env, MESHPILOT_PARENT_WATCHDOG: '1', LOAD_GEN_DEADLINE_MS: String(deadlineMs) },
      stdio: ['pipe', 'inherit', 'inherit', 'ipc'],
    });
    trackChild(this.child);
    this.child.on('message', (raw) => {
      const m = raw as FromLoadGen;
      if (m.type === 'progress') this.synced = m.synced;
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

function mergeReach(rs: readonly GroupReach[]): GroupReach {
  return {
    proxies: rs.reduce((a, r) => a + r.proxies, 0),
    reached: rs.reduce((a, r) => a + r.reached, 0),
    bytes: rs.reduce((a, r) => a + r.bytes, 0),
    noopResponses: rs.reduce((a, r) => a + r.noopResponses, 0),
    responses: rs.reduce((a, r) => addCounts(a, r.responses), {}),
  };
}

export class LoadGenPool {
  private readonly gens: LoadGen[];

  constructor(processes: number, deadlineMs: number) {
    this.gens = Array.from({ length: Math.max(1, processes) }, () => new LoadGen(deadlineMs));
  }

  get pids(): number[] {
    return this.gens.flatMap((g) => (g.child.pid !== undefined ? [g.child.pid] : []));
  }

  /** Proxies synced so far (from the last progress reports). */
  get progress(): number {
    return this.gens.reduce((a, g) => a + g.synced, 0);
  }

  /** Starts the proxies (split in contiguous slices) and resolves when all are synced or the timeout passed. */
  async start(o: {
    addr: string;
    proxies: readonly ProxyPlan[];
    syncTimeoutMs: number;
    delta: boolean;
    connectBatch?: number;
  }): Promise<SyncedMsg> {
    const per = Math.ceil(o.proxies.length / this.gens.length);
    const all = this.gens.map((g, i) => {
      const p = g.next('synced');
      g.send({
        type: 'start',
        addr: o.addr,
        proxies: o.proxies.slice(i * per, (i + 1) * per),
        syncTimeoutMs: o.syncTimeoutMs,
        delta: o.delta,
        ...(o.connectBatch !== undefined ? { connectBatch: o.connectBatch } : {}),
      });
      return p;
    });
    const ms = await Promise.all(all);
    const startedAt = Math.min(...ms.map((m) => m.startedAt));
    return {
      type: 'synced',
      complete: ms.every((m) => m.complete),
      synced: ms.reduce((a, m) => a + m.synced, 0),
      total: ms.reduce((a, m) => a + m.total, 0),
      startedAt,
      lastSyncedAt: Math.max(...ms.map((m) => m.lastSyncedAt)),
      // Re-based on the earliest start, so all are comparable.
      syncMs: ms.flatMap((m) => m.syncMs.map((x) => (x === null ? null : x + m.startedAt - startedAt))),
      ownSyncMs: ms.flatMap((m) => m.ownSyncMs),
      bytes: ms.reduce((a, m) => a + m.bytes, 0),
      responses: ms.reduce((a, m) => addCounts(a, m.responses), {}),
      reconnects: ms.reduce((a, m) => a + m.reconnects, 0),
      streamErrors: ms.reduce((a, m) => addCounts(a, m.streamErrors), {}),
      distinctResources: ms.reduce((a, m) => a + m.distinctResources, 0),
    };
  }

  /** Begins a watch in every process; resolves with the number of expected proxies. */
  async watch(m: Omit<WatchMsg, 'type'>): Promise<number> {
    const ws = this.gens.map((g) => {
      const p = g.next('watching');
      g.send({ type: 'watch', ...m });
      return p;
    });
    return (await Promise.all(ws)).reduce((a, w) => a + w.expected, 0);
  }

  /** Tells every process the change is written; resolves with the merged result. */
  async written(at: number): Promise<ConvergedMsg> {
    const cs = this.gens.map((g) => {
      const p = g.next('converged');
      g.send({ type: 'written', at });
      return p;
    });
    const ms = await Promise.all(cs);
    return {
      type: 'converged',
      complete: ms.every((m) => m.complete),
      arrivals: ms.flatMap((m) => m.arrivals),
      expected: mergeReach(ms.map((m) => m.expected)),
      others: mergeReach(ms.map((m) => m.others)),
      othersReachedByKind: ms.reduce((a, m) => addCounts(a, m.othersReachedByKind), {}),
      lastResponseAt: Math.max(...ms.map((m) => m.lastResponseAt)),
    };
  }

  async stop(): Promise<void> {
    await Promise.all(this.gens.map((g) => g.stop()));
  }
}
