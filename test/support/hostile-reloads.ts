/**
 * What a ConfigStore fed by a FileSource keeps of rejected input: a valid VirtualService, then a
 * hostile corpus (hostile-config.ts) written beside it `rounds` times with new contents, then
 * removed. Reports the V8 heap after a full GC at each step and the store's error bookkeeping
 * (entries and characters). Run it in a child process of its own with `node --expose-gc`
 * (`runHostileReloads`): the heap of a test runner holds other tests' garbage.
 */
import { execFileSync } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigStore } from '../../src/config/store.js';
import { FileSource } from '../../src/config/sources/file-source.js';
import { silentLogger } from '../../src/util/log.js';
import type { ConfigError } from '../../src/config/config.js';
import { corpusBytes, hostileCorpus } from './hostile-config.js';
import { tempDir } from './temp-dir.js';
import { writeFileAtomic } from './yaml-files.js';

export interface HostileReloadFigures {
  readonly files: number;
  readonly rounds: number;
  readonly corpusBytes: number;
  /** Heap after GC (bytes): after a warm-up round (corpus written and removed), with the corpus present after every round, after removal. */
  readonly heapBaseline: number;
  readonly heapWithCorpus: number;
  readonly heapAfterRemoval: number;
  /** The store's error entries (all sources) and the characters of their strings, with the corpus present. */
  readonly storeErrors: number;
  readonly storeErrorChars: number;
  /** Most errors the store holds for one file. */
  readonly maxErrorsPerFile: number;
  readonly storeErrorsAfterRemoval: number;
  /** The valid object is still served. */
  readonly validServed: boolean;
}

const VALID = `apiVersion: networking.istio.io/v1
kind: VirtualService
metadata: {name: good, namespace: default}
spec:
  hosts: [good.default.svc.cluster.local]
  http: [{route: [{destination: {host: good.default.svc.cluster.local}}]}]
`;

const errorChars = (e: ConfigError): number =>
  e.message.length +
  e.origin.file.length +
  (e.kind?.length ?? 0) +
  (e.namespace?.length ?? 0) +
  (e.name?.length ?? 0) +
  (e.path?.length ?? 0);

async function heapAfterGc(): Promise<number> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) throw new Error('run with node --expose-gc');
  // Twice, with a turn of the event loop between: finalizers and weak callbacks run in between.
  gc();
  await new Promise((r) => setTimeout(r, 50));
  gc();
  return process.memoryUsage().heapUsed;
}

/** Runs the scenario in this process (it must have been started with --expose-gc). */
export async function hostileReloads(files: number, rounds: number): Promise<HostileReloadFigures> {
  const dir = tempDir('meshpilot-hostile-');
  const store = new ConfigStore();
  const source = new FileSource({ dir: dir.path, logger: silentLogger, debounceMs: 5 });
  try {
    await writeFileAtomic(dir.path, 'good.yaml', VALID);
    await source.start(store);
    let names: string[] = [];
    const writeRound = async (round: number): Promise<number> => {
      const corpus = hostileCorpus({ files, round });
      names = corpus.map((f) => f.name);
      for (const f of corpus) await writeFileAtomic(dir.path, f.name, f.bytes);
      await source.settled();
      return corpusBytes(corpus);
    };
    const removeAll = async (): Promise<void> => {
      for (const n of names) await rm(join(dir.path, n), { force: true });
      await source.settled();
    };
    // Warm-up: code paths compiled, lazily built tables filled; what is measured is what stays.
    await writeRound(-1);
    await removeAll();
    const heapBaseline = await heapAfterGc();
    let bytes = 0;
    for (let r = 0; r < rounds; r++) bytes += await writeRound(r);
    const heapWithCorpus = await heapAfterGc();
    const errors = [...store.errors().values()].flat();
    const perFile = new Map<string, number>();
    for (const e of errors) perFile.set(e.origin.file, (perFile.get(e.origin.file) ?? 0) + 1);
    await removeAll();
    const heapAfterRemoval = await heapAfterGc();
    return {
      files,
      rounds,
      corpusBytes: bytes,
      heapBaseline,
      heapWithCorpus,
      heapAfterRemoval,
      storeErrors: errors.length,
      storeErrorChars: errors.reduce((n, e) => n + errorChars(e), 0),
      maxErrorsPerFile: Math.max(0, ...perFile.values()),
      storeErrorsAfterRemoval: [...store.errors().values()].flat().length,
      validServed: store.snapshot().get('VirtualService', 'default', 'good') !== undefined,
    };
  } finally {
    await source.stop();
    await dir.remove();
  }
}

/** Runs `hostileReloads` in a fresh `node --expose-gc` child and returns its figures. */
export function runHostileReloads(files: number, rounds: number): HostileReloadFigures {
  const out = execFileSync(
    process.execPath,
    ['--expose-gc', '--import', 'tsx', fileURLToPath(import.meta.url), String(files), String(rounds)],
    { encoding: 'utf8', maxBuffer: 1 << 20, timeout: 110_000 },
  );
  return JSON.parse(out) as HostileReloadFigures;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [files, rounds] = process.argv.slice(2).map(Number);
  process.stdout.write(JSON.stringify(await hostileReloads(files ?? 48, rounds ?? 3)));
}
