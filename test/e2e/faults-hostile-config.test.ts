/**
 * Rejected config costs bounded memory: a FileSource feeding a ConfigStore, 48 hostile files
 * (test/support/hostile-config.ts: alias bombs, deep nesting, non-UTF-8, invalid RE2, out-of-range
 * ports by the thousand, 100 KB names and hosts, a 5 MB file …, ~7 MB per round) written beside a
 * valid object three times with new contents, then removed. Measured in a `node --expose-gc` child
 * of its own, after a warm-up round.
 *
 * The bounds, and why they cannot flake:
 * - counted: at most ERROR_BOUNDS.maxErrorsPerUnit errors (+1 summary) per file, and every error's
 *   strings within maxMessageChars + 5 × maxFieldChars (+ the summary's few words);
 * - heap after GC with the corpus present at most 8 MiB above the baseline: the worst the bounds
 *   allow for 48 files is 48 × 21 × ~3.6 K characters ≈ 3.6 MB, and the measured growth is ~0.3 MB;
 *   without the bounds the same run retained ~30 MB (error texts quoting MB-long fields, a JSON
 *   copy of every error set, strings keeping whole file texts alive);
 * - after removal at most 2 MiB above the baseline (measured ~0.1 MB; 13 MB without the bounds).
 * Heap after a forced GC in a process doing only this is deterministic to well under 1 MB.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ERROR_BOUNDS } from '../../src/config/error-bounds.js';
import { runHostileReloads } from '../support/hostile-reloads.js';

const FILES = 48;
const ROUNDS = 3;
const MiB = 1024 * 1024;

describe('faults: hostile config files', () => {
  it('keep bounded error bookkeeping, and leave nothing once removed', () => {
    const r = runHostileReloads(FILES, ROUNDS);
    const mib = (b: number): string => (b / MiB).toFixed(2);
    process.stderr.write(
      `# hostile config: ${mib(r.corpusBytes)} MiB in ${r.rounds} rounds of ${r.files} files; heap after GC ` +
        `${mib(r.heapBaseline)} → ${mib(r.heapWithCorpus)} with the corpus → ${mib(r.heapAfterRemoval)} MiB after removal; ` +
        `${r.storeErrors} errors kept (${r.storeErrorChars} characters), at most ${r.maxErrorsPerFile} per file\n`,
    );
    assert.ok(r.validServed, 'the valid object is no longer served');
    assert.ok(r.maxErrorsPerFile <= ERROR_BOUNDS.maxErrorsPerUnit + 1, `${r.maxErrorsPerFile} errors kept for one file`);
    assert.ok(r.storeErrors >= FILES, `only ${r.storeErrors} errors for ${FILES} broken files: some were not reported`);
    assert.ok(r.storeErrors <= FILES * (ERROR_BOUNDS.maxErrorsPerUnit + 1), `${r.storeErrors} errors kept`);
    const perError = ERROR_BOUNDS.maxMessageChars + 5 * ERROR_BOUNDS.maxFieldChars + 64;
    assert.ok(r.storeErrorChars <= r.storeErrors * perError, `${r.storeErrorChars} characters in ${r.storeErrors} errors`);
    assert.ok(
      r.heapWithCorpus - r.heapBaseline < 8 * MiB,
      `heap grew ${mib(r.heapWithCorpus - r.heapBaseline)} MiB with the corpus present`,
    );
    assert.equal(r.storeErrorsAfterRemoval, 0, 'errors of removed files are still kept');
    assert.ok(r.heapAfterRemoval - r.heapBaseline < 2 * MiB, `heap grew ${mib(r.heapAfterRemoval - r.heapBaseline)} MiB after removal`);
  });
});
