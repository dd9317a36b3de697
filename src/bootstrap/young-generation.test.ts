import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { REPO_ROOT } from '../../test/support/paths.js';
import { shrinkYoungGenerationWhenQuiet, type Collector } from './young-generation.js';

/** The schedule's timers are unref'd (they must not keep the server alive): hold the loop while waiting. */
async function held<T>(p: Promise<T>): Promise<T> {
  const alive = setInterval(() => {}, 1000);
  try {
    return await p;
  } finally {
    clearInterval(alive);
  }
}

test('a process whose start-up grew the young generation gets it back once quiet (real V8, no --expose-gc)', () => {
  // A fresh process: start-up-like allocation (everything survives) grows the semi-spaces, then the
  // schedule runs with V8's own collector and reports the young generation before and after.
  const script = `
    import { shrinkYoungGenerationWhenQuiet, youngGenerationBytes } from './src/bootstrap/young-generation.ts';
    const kept = [];
    for (let i = 0; i < 2e6; i++) kept.push({ i, tag: 'x' + i });
    const grown = youngGenerationBytes();
    const alive = setInterval(() => {}, 1000); // the schedule's timers are unref'd, as in the server
    const shrunk = await shrinkYoungGenerationWhenQuiet().done;
    clearInterval(alive);
    console.log(JSON.stringify({ grown, shrunk, after: youngGenerationBytes(), kept: kept.length, gcExposed: typeof globalThis.gc }));
  `;
  const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
  });
  const r = JSON.parse(out.trim().split('\n').pop()!) as { grown: number; shrunk: boolean; after: number; kept: number; gcExposed: string };
  assert.ok(r.grown >= 8 * 1024 * 1024, `start-up-like allocation should grow the young generation, got ${r.grown} bytes`);
  assert.equal(r.shrunk, true);
  assert.ok(r.after < r.grown / 2, `young generation ${r.after} bytes after, ${r.grown} before`);
  assert.equal(r.kept, 2e6, 'the live objects survive the collections');
  assert.equal(r.gcExposed, 'undefined', 'gc is not left on the global object');
});

test('a busy process: the tries run out without a shrink, one young-generation collection each', async () => {
  const calls: string[] = [];
  const collect: Collector = ({ type }) => void calls.push(type);
  const shrunk = await held(shrinkYoungGenerationWhenQuiet({ intervalMs: 5, tries: 3, collect }).done);
  assert.equal(shrunk, false);
  assert.deepEqual(calls, ['minor', 'minor', 'minor']);
});

test('cancel (shutdown) stops the pending collections', async () => {
  const calls: string[] = [];
  const collect: Collector = ({ type }) => void calls.push(type);
  const schedule = shrinkYoungGenerationWhenQuiet({ intervalMs: 20, tries: 3, collect });
  schedule.cancel();
  assert.equal(await schedule.done, false);
  await held(new Promise((r) => setTimeout(r, 100)));
  assert.deepEqual(calls, []);
});
