import assert from 'node:assert/strict';
import { test } from 'node:test';
import { withProgress, type ProgressClock } from './progress.js';

/** A clock whose time moves only when the test says so; due timers run in order. */
class FakeClock implements ProgressClock {
  time = 0;
  #next = 1;
  readonly #timers = new Map<number, { at: number; every?: number; fn: () => void }>();
  now = (): number => this.time;
  setTimeout = (fn: () => void, ms: number): unknown => this.#add(fn, ms);
  setInterval = (fn: () => void, ms: number): unknown => this.#add(fn, ms, ms);
  clearTimeout = (t: unknown): void => void this.#timers.delete(t as number);
  clearInterval = (t: unknown): void => void this.#timers.delete(t as number);
  get pending(): number {
    return this.#timers.size;
  }
  #add(fn: () => void, ms: number, every?: number): number {
    const id = this.#next++;
    this.#timers.set(id, every === undefined ? { at: this.time + ms, fn } : { at: this.time + ms, every, fn });
    return id;
  }
  advance(ms: number): void {
    const end = this.time + ms;
    for (;;) {
      const due = [...this.#timers].filter(([, t]) => t.at <= end).sort(([, a], [, b]) => a.at - b.at)[0];
      if (!due) break;
      const [id, t] = due;
      this.time = t.at;
      if (t.every === undefined) this.#timers.delete(id);
      else t.at += t.every;
      t.fn();
    }
    this.time = end;
  }
}

function stream(isTTY: boolean): { isTTY: boolean; written: string[]; write(s: string): void } {
  const written: string[] = [];
  return { isTTY, written, write: (s: string) => void written.push(s) };
}

/** Work the test finishes by hand. */
function pending<T>(): { promise: Promise<T>; resolve: (v: T) => void; reject: (e: Error) => void } {
  let resolve!: (v: T) => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

test('on a terminal, slow work shows a line after a second, redrawn in place, erased when done', async () => {
  const clock = new FakeClock();
  const out = stream(true);
  const work = pending<string>();
  const run = withProgress(out, 'Reading the cluster', () => work.promise, { clock, intervalMs: 500 });
  clock.advance(999);
  assert.deepEqual(out.written, []);
  clock.advance(1);
  clock.advance(1000);
  work.resolve('done');
  assert.equal(await run, 'done');
  assert.deepEqual(out.written, ['\r\x1b[K⠋ Reading the cluster (1.0s)', '\r\x1b[K⠙ Reading the cluster (1.5s)', '\r\x1b[K⠹ Reading the cluster (2.0s)', '\r\x1b[K']);
  assert.equal(clock.pending, 0, 'no timer left behind');
});

test('on a terminal, work done within a second writes nothing', async () => {
  const clock = new FakeClock();
  const out = stream(true);
  const work = pending<number>();
  const run = withProgress(out, 'Reading the cluster', () => work.promise, { clock });
  clock.advance(900);
  work.resolve(7);
  assert.equal(await run, 7);
  assert.deepEqual(out.written, []);
  assert.equal(clock.pending, 0);
});

test('not a terminal (pipes, scripts, tests): never a progress line however long the work takes', async () => {
  const clock = new FakeClock();
  const out = stream(false);
  const work = pending<string>();
  const run = withProgress(out, 'Reading the cluster', () => work.promise, { clock });
  clock.advance(60_000);
  work.resolve('ok');
  assert.equal(await run, 'ok');
  assert.deepEqual(out.written, []);
  assert.equal(clock.pending, 0, 'no timer was even started');
});

test('a failure still erases the line and is passed on unchanged', async () => {
  const clock = new FakeClock();
  const out = stream(true);
  const work = pending<string>();
  const run = withProgress(out, 'Asking the control plane', () => work.promise, { clock });
  clock.advance(1000);
  const err = new Error('connection refused');
  work.reject(err);
  await assert.rejects(run, (e) => e === err);
  assert.deepEqual(out.written, ['\r\x1b[K⠋ Asking the control plane (1.0s)', '\r\x1b[K']);
  assert.equal(clock.pending, 0);
});
