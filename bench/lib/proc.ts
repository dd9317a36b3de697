/** Process figures from /proc (Linux): memory, CPU time, bytes written; and waiting for a process to go idle. */
import { readFile } from 'node:fs/promises';

export interface MemKiB {
  /** VmRSS: resident now. */
  readonly rss: number;
  /** VmHWM: the peak resident set so far. */
  readonly hwm: number;
}

export async function memKiB(pid: number): Promise<MemKiB | undefined> {
  try {
    const s = await readFile(`/proc/${pid}/status`, 'utf8');
    const num = (k: string): number => Number(new RegExp(`^${k}:\\s+(\\d+) kB`, 'm').exec(s)?.[1] ?? NaN);
    return { rss: num('VmRSS'), hwm: num('VmHWM') };
  } catch {
    return undefined;
  }
}

/** utime + stime of a process in ms (from /proc; clock ticks assumed 100 Hz, as on Linux). */
export async function cpuMs(pid: number): Promise<number> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * 10;
  } catch {
    return NaN;
  }
}

/** Bytes the process passed to write-like syscalls (sockets included): /proc/<pid>/io wchar. */
export async function writtenBytes(pid: number): Promise<number> {
  try {
    const s = await readFile(`/proc/${pid}/io`, 'utf8');
    return Number(/^wchar:\s+(\d+)/m.exec(s)?.[1] ?? NaN);
  } catch {
    return NaN;
  }
}

/**
 * CPU time (ms) the machine spent in processes so far, plus time stolen by the hypervisor
 * (/proc/stat user + nice + system + steal; interrupt time is left out: loopback traffic of the
 * bench itself lands there, attributed to no process).
 */
export async function machineBusyMs(): Promise<number> {
  try {
    const line = (await readFile('/proc/stat', 'utf8')).split('\n')[0] ?? '';
    const [, user, nice, system, , , , , steal] = line.trim().split(/\s+/).map(Number);
    return ((user ?? 0) + (nice ?? 0) + (system ?? 0) + (steal ?? 0)) * 10;
  } catch {
    return NaN;
  }
}

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Waits until the processes used at most `maxCpuMs` CPU together over a `windowMs` window (or
 * `maxWaitMs` passed). Returns how long it waited and whether they went quiet.
 */
export async function waitIdle(
  pids: readonly number[],
  o: { windowMs?: number; maxCpuMs?: number; maxWaitMs?: number } = {},
): Promise<{ waitedMs: number; idle: boolean }> {
  const windowMs = o.windowMs ?? 300;
  const maxCpuMs = o.maxCpuMs ?? 10;
  const maxWaitMs = o.maxWaitMs ?? 5000;
  const t0 = Date.now();
  const total = async (): Promise<number> => (await Promise.all(pids.map(cpuMs))).reduce((a, b) => a + b, 0);
  let before = await total();
  for (;;) {
    await pause(windowMs);
    const now = await total();
    if (now - before <= maxCpuMs) return { waitedMs: Date.now() - t0, idle: true };
    if (Date.now() - t0 >= maxWaitMs) return { waitedMs: Date.now() - t0, idle: false };
    before = now;
  }
}
