/**
 * In-process: malformed Istio YAML and JSON through parse → validate →
 * FileTracker → ConfigStore (what FileSource runs per file), 1000 cases per run (FUZZ_RUNS for
 * more). Properties in test/support/fuzz/config-properties.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { describeFile, fuzzFile } from '../support/fuzz/config-mutations.js';
import { checkDuplicateFiles, checkFileCase } from '../support/fuzz/config-properties.js';
import { overlappingObjects } from '../support/fuzz/istio-objects.js';
import { FuzzFigures, fuzzParams } from '../support/fuzz/runs.js';

/** Generous: a multi-MB file parses in ~100 ms here; the point is "bounded", not fast. */
const MAX_MS_PER_FILE = 5000;

test('fuzzed config files: no throw, bounded time, valid objects apply, invalid ones reported with file/kind/name/field', () => {
  const figures = new FuzzFigures();
  fc.assert(
    fc.property(fuzzFile(), (f) => {
      const r = checkFileCase(f);
      figures.record(r.ms, () => describeFile(f));
      assert.ok(r.ms < MAX_MS_PER_FILE, `${describeFile(f)} took ${r.ms.toFixed(0)} ms`);
    }),
    fuzzParams({ ci: 1000 }),
  );
  process.stderr.write(`# ${figures.summary('config fuzz (in-process)')}\n`);
});

test('the same object in two files: the first file by path wins whatever the load order, the other is reported; deleting the winner hands over', () => {
  fc.assert(
    fc.property(overlappingObjects(), fc.boolean(), ({ first, second }, secondLoadedFirst) =>
      checkDuplicateFiles({ first, second, secondLoadedFirst }),
    ),
    fuzzParams({ ci: 200, share: 0.2 }),
  );
});
