/** The console's load charts: one sample a second while a console is open, the last few minutes kept. */

export interface LoadSample {
  /** Epoch ms. */
  readonly at: number;
  /** xDS responses written per second (pilot_xds_pushes, every type). */
  readonly pushesPerSec: number;
  /** Connections waiting in the push queue, and being pushed. */
  readonly queued: number;
  readonly pushing: number;
  /** CPU time of the process per wall time, in percent of one core. */
  readonly cpuPercent: number;
  readonly rssBytes: number;
  readonly heapUsedBytes: number;
  readonly connected: number;
}

export interface LoadSources {
  /** Every xDS response written so far (the sum of pilot_xds_pushes). */
  pushesTotal(): number;
  queueDepth(): { readonly pending: number; readonly processing: number };
  connected(): number;
}

/** Samples kept: five minutes at one a second. */
export const LOAD_SAMPLES_KEPT = 300;

export class LoadSampler {
  private readonly samples: LoadSample[] = [];
  private last: { at: number; pushes: number; cpu: NodeJS.CpuUsage } | undefined;

  constructor(private readonly src: LoadSources) {}

  /** Takes a sample; the first one after `reset` has no rate yet (0). */
  sample(now: number): LoadSample {
    const pushes = this.src.pushesTotal();
    const cpu = process.cpuUsage();
    const prev = this.last;
    const dtMs = prev ? Math.max(1, now - prev.at) : 0;
    const cpuMicros = prev ? cpu.user - prev.cpu.user + (cpu.system - prev.cpu.system) : 0;
    const mem = process.memoryUsage();
    const q = this.src.queueDepth();
    const s: LoadSample = {
      at: now,
      pushesPerSec: prev ? Math.round(((pushes - prev.pushes) * 1000) / dtMs) : 0,
      queued: q.pending,
      pushing: q.processing,
      cpuPercent: prev ? Math.round(cpuMicros / dtMs / 10) : 0,
      rssBytes: mem.rss,
      heapUsedBytes: mem.heapUsed,
      connected: this.src.connected(),
    };
    this.last = { at: now, pushes, cpu };
    this.samples.push(s);
    if (this.samples.length > LOAD_SAMPLES_KEPT) this.samples.splice(0, this.samples.length - LOAD_SAMPLES_KEPT);
    return s;
  }

  history(): readonly LoadSample[] {
    return this.samples;
  }

  /** No console is open: forget the rate baseline (the samples stay for the next console). */
  reset(): void {
    this.last = undefined;
  }
}
