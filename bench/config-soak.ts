/**
 * What rejected config costs a running meshpilot: a valid mesh in a config directory, then a
 * hostile corpus (test/support/hostile-config.ts: alias bombs, deep nesting, non-UTF-8, invalid
 * RE2, out-of-range ports, giant names, a 5 MB file …) written beside it in batches, rewritten
 * with new contents every round, and finally removed. After every batch the process is left to go
 * idle and its RSS (/proc) and V8 heap after a full GC (/debug/memz?gc=true, node --expose-gc)
 * are sampled; the valid config must still be served at the end.
 *
 *   npx tsx bench/config-soak.ts [--rounds 3] [--files 300] [--batches 24] [--idle 10] [--dist] [--seed N]
 *
 * RSS figures on a shared machine are indicative; compare runs made back to back.
 */
import { parseArgs } from 'node:util';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { writeFileAtomic } from '../test/support/yaml-files.js';
import { corpusBytes, hostileCorpus } from '../test/support/hostile-config.js';
import { meshDir, startOn } from './faults/mesh-process.js';
import { buildCli } from './lib/build.js';
import { memKiB, waitIdle } from './lib/proc.js';

const { values: args } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    files: { type: 'string', default: '300' },
    batches: { type: 'string', default: '24' },
    idle: { type: 'string', default: '10' },
    seed: { type: 'string', default: '1' },
    dist: { type: 'boolean', default: false },
  },
});
const rounds = Number(args.rounds);
const files = Number(args.files);
const batches = Number(args.batches);
const idleMs = Number(args.idle) * 1000;
const seed = Number(args.seed);

const MiB = 1024 * 1024;
const mib = (bytes: number): string => (bytes / MiB).toFixed(1);

interface Sample {
  readonly label: string;
  readonly rssMiB: string;
  readonly heapAfterGcMiB: string;
  readonly errors: number;
}

// The server's heap after GC needs node's gc(): --expose-gc for the child only.
process.env.MESHPILOT_NODE_ARGS = `${process.env.MESHPILOT_NODE_ARGS ?? ''} --expose-gc`.trim();
const cliJs = args.dist ? buildCli((m) => console.error(m)) : undefined;
const dir = await meshDir();
const mp = await startOn(dir, cliJs !== undefined ? { cliJs } : {});
const samples: Sample[] = [];

async function debugJson(path: string): Promise<Record<string, unknown>> {
  const res = await fetch(`http://${mp.httpAddr}${path}`);
  if (!res.ok) throw new Error(`${path}: HTTP ${res.status}`);
  return (await res.json()) as Record<string, unknown>;
}

async function sample(label: string, idleFirst = true): Promise<Sample> {
  // Settled: the file source rescanned and the push went out (CPU quiet), then GC.
  if (idleFirst) await waitIdle([mp.pid], { windowMs: 500, maxCpuMs: 25, maxWaitMs: 60_000 });
  const memz = await debugJson('/debug/memz?gc=true');
  const rss = (await memKiB(mp.pid))?.rss ?? NaN;
  const configz = await debugJson('/debug/configz');
  const s: Sample = {
    label,
    rssMiB: mib(rss * 1024),
    heapAfterGcMiB: mib(Number(memz.heapUsed)),
    errors: Array.isArray(configz.errors) ? configz.errors.length : -1,
  };
  samples.push(s);
  console.error(`${label}: RSS ${s.rssMiB} MiB, heap after GC ${s.heapAfterGcMiB} MiB, config errors ${s.errors}`);
  return s;
}

const validCount = async (): Promise<number> => {
  const configz = await debugJson('/debug/configz');
  return Array.isArray(configz.configs) ? configz.configs.length : -1;
};

let exitCode = 0;
try {
  const valid = await validCount();
  await sample('start');
  let written = 0;
  let names = new Set<string>();
  for (let round = 0; round < rounds; round++) {
    const corpus = hostileCorpus({ files, round, seed });
    written += corpusBytes(corpus);
    names = new Set(corpus.map((f) => f.name));
    const per = Math.ceil(corpus.length / batches);
    for (let b = 0; b < batches; b++) {
      await Promise.all(corpus.slice(b * per, (b + 1) * per).map((f) => writeFileAtomic(dir.path, f.name, f.bytes)));
      await waitIdle([mp.pid], { windowMs: 300, maxCpuMs: 15, maxWaitMs: 30_000 });
    }
    await sample(`round ${round + 1} (${mib(corpusBytes(corpus))} MiB in ${corpus.length} files)`);
  }
  const stillValid = await validCount();
  await Promise.all([...names].map((n) => rm(join(dir.path, n), { force: true })));
  await sample('hostile files removed');
  await new Promise((r) => setTimeout(r, idleMs));
  const end = await sample(`after ${idleMs / 1000} s idle`);
  const ok = stillValid === valid && end.errors === 0 && mp.alive();
  if (!ok) exitCode = 1;
  console.log(
    `\nconfig soak: ${rounds} rounds × ${files} files in ${batches} batches, ${mib(written)} MiB of hostile input written in all; ` +
      `valid objects ${valid} → ${stillValid} while hostile${ok ? '' : ' — FAILED'}\n`,
  );
  console.log('| when | RSS MiB | heap after GC MiB | config errors |\n|---|---|---|---|');
  for (const s of samples) console.log(`| ${s.label} | ${s.rssMiB} | ${s.heapAfterGcMiB} | ${s.errors} |`);
} finally {
  await mp.stop();
  await dir.remove();
}
process.exit(exitCode);
