import assert from 'node:assert/strict';
import { test } from 'node:test';
import { deferred, FakeClock } from '../../test/fake-clock.js';
import { withProgress } from './progress.js';

function stream(isTTY: boolean): { isTTY: boolean; written: string[]; write(s: string): void } {
  const written: string[] = [];
  return { isTTY, written, write: (s: string) => void written.push(s) };
}

test('on a terminal, slow work shows a line after a second, redrawn in place, erased when done', async () => {
  const clock = new FakeClock();
  const out = stream(true);
  const work = deferred<string>();
  const run = withProgress(out, 'Reading the cluster', () => work.promise, { clock, intervalMs: 500 });
  clock.advance(999);
  assert.deepEqual(out.written, []);
  clock.advance(1);
  clock.advance(1000);
  work.resolve('done');
  assert.equal(await run, 'done');
  assert.deepEqual(out.written, [
    '\r\x1b[K⠋ Reading the cluster (1.0s)',
    '\r\x1b[K⠙ Reading the cluster (1.5s)',
    '\r\x1b[K⠹ Reading the cluster (2.0s)',
    '\r\x1b[K',
  ]);
  assert.equal(clock.pendingTimers(), 0, 'no timer left behind');
});

test('on a terminal, work done within a second writes nothing', async () => {
  const clock = new FakeClock();
  const out = stream(true);
  const work = deferred<number>();
  const run = withProgress(out, 'Reading the cluster', () => work.promise, { clock });
  clock.advance(900);
  work.resolve(7);
  assert.equal(await run, 7);
  assert.deepEqual(out.written, []);
  assert.equal(clock.pendingTimers(), 0);
});

test('not a terminal (pipes, scripts, tests): never a progress line however long the work takes', async () => {
  const clock = new FakeClock();
  const out = stream(false);
  const work = deferred<string>();
  const run = withProgress(out, 'Reading the cluster', () => work.promise, { clock });
  clock.advance(60_000);
  work.resolve('ok');
  assert.equal(await run, 'ok');
  assert.deepEqual(out.written, []);
  assert.equal(clock.pendingTimers(), 0, 'no timer was even started');
});

test('a failure still erases the line and is passed on unchanged', async () => {
  const clock = new FakeClock();
  const out = stream(true);
  const work = deferred<string>();
  const run = withProgress(out, 'Asking the control plane', () => work.promise, { clock });
  clock.advance(1000);
  const err = new Error('connection refused');
  work.reject(err);
  await assert.rejects(run, (e) => e === err);
  assert.deepEqual(out.written, ['\r\x1b[K⠋ Asking the control plane (1.0s)', '\r\x1b[K']);
  assert.equal(clock.pendingTimers(), 0);
});
