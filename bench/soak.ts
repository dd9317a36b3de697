/**
 * Runs the hardening scenarios for a chosen time and prints one table.
 *
 *   npm run soak -- [--duration 10m] [--parts config-fuzz,xds-fuzz,cache-evict] [--seed N]
 *
 * Parts: config-fuzz (malformed config through parse → validate → store, in-process), xds-fuzz
 * (abusive SotW/Delta clients against an in-process DiscoveryServer over gRPC, with the heap after
 * GC at the start and end), cache-evict (a full XdsCache taking new entries), and the load and
 * fault scenarios: churn, storm, slow-readers, sigkill, kube-restart (each runs once,
 * at its size; churn stops early at its deadline). The time is shared equally between the parts
 * run. `--dist` builds the CLI (npm run build) and runs meshpilot processes from dist/ with plain
 * node, as shipped (storm, sigkill). A new part is one entry of PARTS: a name, what it does, and
 * a function that runs until its deadline and returns one row.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import { parseDurationMs } from '../src/util/duration.js';
import { XdsCache } from '../src/model/xds-cache.js';
import type { FaultFigures } from '../test/support/faults/figures.js';
import { churnScenario } from '../test/support/faults/churn.js';
import { kubeRestartScenario } from '../test/support/faults/kube-restart.js';
import { slowReaderScenario } from '../test/support/faults/slow-readers.js';
import { kubeSkipReason, startKubeCluster } from '../test/support/kube.js';
import { restartScenario } from './faults/restart.js';
import { stormScenario } from './faults/storm.js';
import { buildCli } from './lib/build.js';
import { describeFile, fuzzFile } from '../test/support/fuzz/config-mutations.js';
import { checkFileCase } from '../test/support/fuzz/config-properties.js';
import { FuzzFigures } from '../test/support/fuzz/runs.js';
import { describeCase, runAbuseCase } from '../test/support/fuzz/xds-abuse.js';
import { startFuzzXdsServer } from '../test/support/fuzz/xds-fuzz-server.js';
import { fuzzActions, fuzzNode } from '../test/support/fuzz/xds-requests.js';

/** One line of the table. */
type Row = FaultFigures & { readonly part: string };

interface SoakContext {
  /** --dist: the built CLI for meshpilot processes. */
  readonly cliJs?: string;
}

interface SoakPart {
  readonly describe: string;
  /** In-process parts run synchronously (they own the event loop for their share); the others await child processes. */
  run(deadline: number, seed: number, ctx: SoakContext): Row | Promise<Row>;
}

const faultRow = async (part: string, run: () => Promise<FaultFigures>): Promise<Row> => {
  try {
    const r = await run();
    return {
      part,
      cases: r.cases,
      seconds: r.seconds,
      maxMs: r.maxMs,
      rssGrowthMiB: r.rssGrowthMiB,
      notes: r.notes,
      ...(r.failure !== undefined ? { failure: r.failure } : {}),
    };
  } catch (err) {
    return { part, cases: 0, seconds: 0, maxMs: 0, rssGrowthMiB: 0, notes: '', failure: failureOf(err, 'scenario failed') };
  }
};

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
/** Heap after GC; twice, with a pause between, so FinalizationRegistry callbacks (NameSetPool) have run. */
async function heapMiB(): Promise<number> {
  gc();
  await new Promise((r) => setTimeout(r, 100));
  gc();
  return process.memoryUsage().heapUsed / 1024 / 1024;
}

/** Samples one case at a time (fast-check's generator, our loop: it stops at the deadline). */
function* cases<T>(arb: fc.Arbitrary<T>, seed: number): Generator<T> {
  for (let i = 0; ; i++) {
    const [v] = fc.sample(arb, { numRuns: 1, seed: seed + i });
    if (v !== undefined) yield v;
  }
}

const failureOf = (err: unknown, what: string): string => `${what}: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`;

const PARTS: Record<string, SoakPart> = {
  'config-fuzz': {
    describe: 'malformed Istio YAML/JSON through parse → validate → tracker → store, in-process',
    run(deadline, seed) {
      const figures = new FuzzFigures();
      let failure: string | undefined;
      for (const f of cases(fuzzFile(), seed)) {
        if (Date.now() >= deadline) break;
        try {
          const r = checkFileCase(f);
          figures.record(r.ms, () => describeFile(f));
        } catch (err) {
          failure ??= failureOf(err, describeFile(f).slice(0, 200));
        }
      }
      const fig = figures.figures();
      return { part: 'config-fuzz', ...fig, notes: `slowest: ${fig.worst.slice(0, 80)}`, ...(failure ? { failure } : {}) };
    },
  },
  'xds-fuzz': {
    describe: 'abusive SotW/Delta clients against an in-process DiscoveryServer over gRPC',
    async run(deadline, seed) {
      const srv = await startFuzzXdsServer();
      const figures = new FuzzFigures();
      let failure: string | undefined;
      let n = 0;
      const heapStart = await heapMiB();
      const halfway = Date.now() + (deadline - Date.now()) / 2;
      let heapHalf: number | undefined;
      let heapEnd: number | undefined;
      let cacheEntries: number | undefined;
      try {
        const arb = fc
          .boolean()
          .chain((delta) => fc.record({ node: fuzzNode('soak'), actions: fuzzActions(delta) }).map((c) => ({ ...c, delta })));
        for (const c of cases(arb, seed)) {
          if (Date.now() >= deadline) break;
          if (heapHalf === undefined && Date.now() >= halfway) heapHalf = await heapMiB();
          // Unique pod per case: the node arbitrary was built for 'soak'.
          const pod = `soak-${++n}`;
          const node = { ...c.node, node: { ...c.node.node, id: c.node.node.id.replace('~soak.', `~${pod}.`) } };
          try {
            const r = await runAbuseCase(srv, { ...c, node }, pod);
            figures.record(r.ms, () => describeCase(c));
          } catch (err) {
            failure ??= failureOf(err, describeCase(c).slice(0, 200));
          }
        }
        // Before stopping: what the running server holds (its resource cache is bounded at 60,000).
        heapEnd = await heapMiB();
        cacheEntries = srv.xds.cache.stats().size;
      } finally {
        await srv.stop();
      }
      const fig = figures.figures();
      const end = heapEnd ?? heapStart;
      const heap = `heap after GC ${heapStart.toFixed(1)} → ${(heapHalf ?? end).toFixed(1)} (half time) → ${end.toFixed(1)} MiB, xDS cache ${cacheEntries ?? '?'} entries`;
      return { part: 'xds-fuzz', ...fig, notes: heap, ...(failure ? { failure } : {}) };
    },
  },
  'cache-evict': {
    describe: 'a full XdsCache (60,000 entries) taking new entries, as made-up EDS names cause',
    run(deadline) {
      const cache = new XdsCache(60_000);
      const figures = new FuzzFigures();
      let i = 0;
      for (; i < 60_000; i++) cache.getOrBuild(`k${i}`, () => i);
      const batch = 10_000;
      while (Date.now() < deadline) {
        const t0 = performance.now();
        for (const end = i + batch; i < end; i++) cache.getOrBuild(`k${i}`, () => i);
        figures.record(performance.now() - t0, () => `${batch} inserts`);
      }
      const fig = figures.figures();
      return {
        part: 'cache-evict',
        ...fig,
        cases: fig.cases * batch,
        notes: `${((fig.maxMs * 1000) / batch).toFixed(2)} µs per insert at worst; ${cache.stats().evictions} evictions`,
      };
    },
  },
  churn: {
    describe:
      '10,000 connect/subscribe/disconnect cycles on an in-process DiscoveryServer; RSS after idle and a heap-snapshot census of connection objects',
    run: (deadline) => faultRow('churn', () => churnScenario({ cycles: 10_000, deadline })),
  },
  storm: {
    describe:
      '2,000 simulated sidecars connect at once to a meshpilot process at its default admission rate: time until all synced, streams refused',
    run: (_deadline, _seed, ctx) =>
      faultRow('storm', () => stormScenario({ proxies: 2000, ...(ctx.cliJs !== undefined ? { cliJs: ctx.cliJs } : {}) })),
  },
  'slow-readers': {
    describe:
      '50 proxies stop reading (no HTTP/2 window update) over 50 config changes: heap, pending responses per stream, newest version on resume',
    run: () => faultRow('slow-readers', () => slowReaderScenario({ readers: 50, changes: 50 })),
  },
  sigkill: {
    describe: 'SIGKILL meshpilot under 200 synced sidecars and start it again on the same port: resync time after ready',
    run: (_deadline, _seed, ctx) =>
      faultRow('sigkill', () => restartScenario({ proxies: 200, ...(ctx.cliJs !== undefined ? { cliJs: ctx.cliJs } : {}) })),
  },
  'kube-restart': {
    describe: "kube-apiserver restarted while meshpilot's watch is cut, writes before/during/after: every object ends up in meshpilot",
    async run() {
      const skip = kubeSkipReason();
      if (skip) return { part: 'kube-restart', cases: 0, seconds: 0, maxMs: 0, rssGrowthMiB: 0, notes: `SKIPPED: ${skip}` };
      const cluster = await startKubeCluster();
      try {
        await cluster.applyIstioCrds();
        return await faultRow('kube-restart', () => kubeRestartScenario(cluster, { perRound: 20 }));
      } finally {
        await cluster.stop();
      }
    },
  },
};

interface SoakOptions {
  readonly durationMs: number;
  readonly parts: readonly string[];
  readonly seed: number;
  readonly dist: boolean;
}

function parseArgs(argv: readonly string[]): SoakOptions {
  let durationMs = 60_000;
  let parts = Object.keys(PARTS);
  let seed = Date.now() % 1_000_000;
  let dist = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const v = argv[i + 1];
    if (a === '--dist') {
      dist = true;
      continue;
    }
    if (a === '--duration' && v !== undefined) durationMs = parseDurationMs(v, '--duration');
    else if (a === '--parts' && v !== undefined) parts = v.split(',').filter((p) => p !== '');
    else if (a === '--seed' && v !== undefined) seed = Number(v);
    else if (a === '--help') {
      console.log(
        `npm run soak -- [--duration 10m] [--parts ${Object.keys(PARTS).join(',')}] [--seed N] [--dist]\n${Object.entries(PARTS)
          .map(([k, p]) => `  ${k}: ${p.describe}`)
          .join('\n')}`,
      );
      process.exit(0);
    } else throw new Error(`unknown argument ${a ?? ''} (--help)`);
    i++;
  }
  const unknown = parts.filter((p) => !(p in PARTS));
  if (unknown.length > 0) throw new Error(`unknown part(s) ${unknown.join(', ')}; known: ${Object.keys(PARTS).join(', ')}`);
  if (!Number.isInteger(seed)) throw new Error('--seed must be an integer');
  return { durationMs, parts, seed, dist };
}

function printTable(rows: readonly Row[]): void {
  const header = ['part', 'cases', 'seconds', 'cases/s', 'max ms/case', 'max RSS growth MiB', 'notes'];
  const lines = rows.map((r) => [
    r.part,
    String(r.cases),
    r.seconds.toFixed(1),
    (r.cases / Math.max(r.seconds, 1e-9)).toFixed(1),
    r.maxMs.toFixed(1),
    r.rssGrowthMiB.toFixed(1),
    r.failure ? `FAILED ${r.failure}${r.notes ? `; ${r.notes}` : ''}` : r.notes,
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => (l[i] ?? '').length)));
  const fmt = (cells: readonly string[]): string => `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  console.log(fmt(header));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const l of lines) console.log(fmt(l));
}

async function main(): Promise<void> {
  const o = parseArgs(process.argv.slice(2));
  const share = o.durationMs / o.parts.length;
  const rows: Row[] = [];
  const ctx: SoakContext = o.dist ? { cliJs: buildCli((m) => process.stderr.write(`[soak] ${m}\n`)) } : {};
  for (const name of o.parts) {
    const part = PARTS[name];
    if (!part) continue;
    process.stderr.write(`[soak] ${name} for ${Math.round(share / 1000)} s (seed ${o.seed})\n`);
    rows.push(await part.run(Date.now() + share, o.seed, ctx));
  }
  printTable(rows);
  if (rows.some((r) => r.failure)) process.exitCode = 1;
}

await main();
