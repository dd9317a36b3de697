/**
 * The web console's one event stream. Every open console gets the same server-sent events: a full
 * state when it connects, then at most one message per tick (TICK_MS, i.e. ≤ 4 a second) carrying
 * only the sections that changed. Everything here reads what the server already records
 * (connections' sync state, the propagation tracker, the config store's errors, the push volume
 * observer); nothing runs, and the volume observer records nothing, while no console is open.
 */
import type { ServerResponse } from 'node:http';
import type { ConfigError, ConfigSnapshot } from '../../config/index.js';
import type { Logger } from '../../util/log.js';
import { errorMessage } from '../../util/errors.js';
import type { Connection, PropagationTracker, PushVolume } from '../../xds/index.js';
import { changeViews, convergenceHistogram, type ChangeView, type ConvergenceHistogram } from './changes-view.js';
import { rejectedObjects, type ConfigAnalyzer, type HealthView } from './health-view.js';
import { LoadSampler, type LoadSample } from './load-sampler.js';
import { ProxyTable, type ProxyCounts, type ProxyRow } from './proxies-view.js';

/** One message per tick at most: the page never gets more than 4 updates a second. */
export const TICK_MS = 250;
const LOAD_EVERY_TICKS = 4;
const HEALTH_EVERY_TICKS = 4;
/** The proxy table is rebuilt when a stream event moved, and at least this often (a missed change heals). */
const PROXIES_REFRESH_TICKS = 16;
/**
 * Largest share of the event loop the proxy table may take: after a rebuild of T ms the next waits
 * T / duty (a 2,000-row table that changed everywhere costs ~10–30 ms on a busy 2-core machine).
 */
const PROXIES_MAX_DUTY = 0.05;
/** While a push is written and ACKed, the table yields more: at most this share, and once a second. */
const PROXIES_MAX_DUTY_PUSHING = 0.01;
const PROXIES_PUSHING_MIN_TICKS = 4;
const HISTOGRAM_WINDOW_MS = 60 * 60 * 1000;
const HISTOGRAM_EVERY_TICKS = 40;
/** Analysis runs at most this often while config keeps changing. */
const ANALYSIS_MIN_INTERVAL_MS = 2000;
/** A comment line after this much silence keeps proxies and browsers from closing the stream. */
const KEEPALIVE_MS = 15_000;
/** The longest analysis waits for pushes to converge (a proxy that never ACKs must not hold it off). */
const ANALYSIS_MAX_DEFER_MS = 10_000;
/** Bytes queued for one console before it skips events (then it gets the whole state once drained). */
const MAX_QUEUED_BYTES = 4 << 20;

export interface ConsoleSources {
  readonly xds: {
    connectionList(): readonly Connection[];
    queueDepth(): { readonly pending: number; readonly processing: number };
    push(): { readonly version: string; readonly registry: { readonly services: readonly unknown[] } };
    readonly stats: { snapshot(): { readonly pushes: Readonly<Record<string, number>> } };
  };
  readonly tracker: PropagationTracker;
  readonly volume: PushVolume;
  readonly store: {
    snapshot(): ConfigSnapshot;
    errors(): ReadonlyMap<string, readonly ConfigError[]>;
    onChange(listener: () => void): () => void;
  };
  readonly analyze?: ConfigAnalyzer;
  readonly logger: Logger;
  /** Epoch ms (tests pass their own). */
  readonly now?: () => number;
}

interface Summary {
  readonly connected: number;
  readonly pushVersion: string;
  readonly services: number;
}

/** What one event carries; absent sections did not change. */
export interface ConsoleEvent {
  readonly seq: number;
  readonly at: number;
  readonly full?: true;
  readonly summary?: Summary;
  readonly proxies?: {
    readonly rows?: readonly ProxyRow[];
    readonly upsert?: readonly ProxyRow[];
    readonly remove?: readonly string[];
    readonly counts: ProxyCounts;
  };
  readonly changes?: readonly ChangeView[];
  readonly histogram?: ConvergenceHistogram;
  readonly health?: HealthView;
  readonly load?: { readonly samples?: readonly LoadSample[]; readonly append?: readonly LoadSample[] };
}

interface Client {
  readonly res: ServerResponse;
  needsFull: boolean;
  /** Its socket holds more than the high-water mark: nothing more is written until it drains. */
  blocked: boolean;
  /** An event was skipped while blocked: the client's state is behind. */
  missed: boolean;
  lastWriteAt: number;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

/** One server-sent event of JSON (a single `data:` line: JSON.stringify never writes a newline). */
function sseData(ev: ConsoleEvent | undefined): string | undefined {
  return ev && `data: ${JSON.stringify(ev)}\n\n`;
}

export class ConsoleHub {
  private readonly clients = new Set<Client>();
  private readonly table = new ProxyTable();
  private readonly load: LoadSampler;
  private readonly now: () => number;
  private timer: NodeJS.Timeout | undefined;
  private stopVolume: (() => void) | undefined;
  private stopStore: (() => void) | undefined;
  private tick = 0;
  private seq = 0;
  /** Revisions the proxy table and the change list were last built at. */
  private proxiesRev = -1;
  /** The first tick the proxy table may be rebuilt at again (PROXIES_MAX_DUTY). */
  private proxiesNextTick = 0;
  private changesRev = { tracker: -1, volume: -1 };
  private counts: ProxyCounts | undefined;
  private summary: Summary | undefined;
  private changes: { views: ChangeView[]; key: string } | undefined;
  private histogram: { view: ConvergenceHistogram; key: string } | undefined;
  private health: { view: HealthView; key: string } | undefined;
  private analysis: Pick<HealthView, 'analysis' | 'analysisNote' | 'analyzedAt'>;
  private analysisDirty = true;
  /** When the config changed since the last analysis (analysis waits for a push at most ANALYSIS_MAX_DEFER_MS). */
  private analysisWantedAt = 0;
  private analysisRunning = false;
  private analysisStartedAt = 0;
  private closed = false;

  constructor(private readonly src: ConsoleSources) {
    this.now = src.now ?? (() => performance.timeOrigin + performance.now());
    this.analysis = src.analyze
      ? { analysisNote: 'analysis is running' }
      : { analysisNote: 'no analysis: it runs over --configDir (for a cluster: meshctl analyze -k)' };
    this.load = new LoadSampler({
      pushesTotal: () => Object.values(src.xds.stats.snapshot().pushes).reduce((a, b) => a + b, 0),
      queueDepth: () => src.xds.queueDepth(),
      connected: () => src.xds.connectionList().length,
    });
  }

  /** Open consoles. */
  size(): number {
    return this.clients.size;
  }

  /** Serves one console's event stream on `res` (its head already written) until it closes. */
  attach(res: ServerResponse): void {
    if (this.closed) {
      res.end();
      return;
    }
    const client: Client = { res, needsFull: true, blocked: false, missed: false, lastWriteAt: 0 };
    this.clients.add(client);
    res.on('close', () => this.detach(client));
    res.on('drain', () => {
      client.blocked = false;
      // A client that skipped deltas while its socket was full gets the whole state again.
      if (client.missed) client.needsFull = true;
      client.missed = false;
    });
    // Tell EventSource how long to wait before reconnecting.
    this.write(client, 'retry: 2000\n\n');
    if (this.clients.size === 1) {
      // The first console: build the state now rather than a tick later.
      this.start();
      this.step();
      return;
    }
    // Later ones get the state as the others have it (the next delta applies to it); stepping here
    // would send the others an extra event, past 4 a second when consoles connect in a burst.
    client.needsFull = false;
    this.write(client, sseData(this.fullEvent()) ?? '');
  }

  close(): void {
    this.closed = true;
    for (const c of [...this.clients]) c.res.end();
    this.stop();
  }

  private detach(client: Client): void {
    if (!this.clients.delete(client)) return;
    if (this.clients.size === 0) this.stop();
  }

  private start(): void {
    this.stopVolume = this.src.volume.subscribe();
    this.stopStore = this.src.store.onChange(() => {
      if (!this.analysisDirty) this.analysisWantedAt = this.now();
      this.analysisDirty = true;
    });
    this.analysisDirty = true;
    this.proxiesRev = -1;
    this.proxiesNextTick = 0;
    this.changesRev = { tracker: -1, volume: -1 };
    this.timer = setInterval(() => this.step(), TICK_MS);
    this.timer.unref();
  }

  private stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    this.stopVolume?.();
    this.stopVolume = undefined;
    this.stopStore?.();
    this.stopStore = undefined;
    this.load.reset();
  }

  /** One tick: what changed goes to the consoles in step, the whole state to those that need it. */
  private step(): void {
    try {
      // Each event is serialized once, however many consoles are open.
      const delta = sseData(this.collect());
      const full = [...this.clients].some((c) => c.needsFull && !c.blocked) ? sseData(this.fullEvent()) : undefined;
      const now = this.now();
      for (const c of this.clients) {
        if (c.blocked) {
          if (delta) c.missed = true;
          continue;
        }
        if (c.needsFull && full) {
          c.needsFull = false;
          this.write(c, full);
        } else if (delta) this.write(c, delta);
        else if (now - c.lastWriteAt > KEEPALIVE_MS) this.write(c, ': keepalive\n\n');
      }
    } catch (err) {
      this.src.logger.warn('console update failed', { error: errorMessage(err) });
    }
  }

  /** Refreshes every section due this tick; the changed ones as one event (undefined: nothing changed). */
  private collect(): ConsoleEvent | undefined {
    const tick = this.tick++;
    const now = this.now();
    const ev: Mutable<ConsoleEvent> = { seq: 0, at: now };
    let changed = false;

    const summary = this.currentSummary();
    if (JSON.stringify(summary) !== JSON.stringify(this.summary)) {
      this.summary = summary;
      ev.summary = summary;
      changed = true;
    }
    const volumeRev = this.src.volume.revision();
    if ((volumeRev !== this.proxiesRev || tick % PROXIES_REFRESH_TICKS === 0) && tick >= this.proxiesNextTick) {
      this.proxiesRev = volumeRev;
      const started = performance.now();
      const d = this.table.update(this.src.xds.connectionList());
      if (d.upsert.length > 0 || d.remove.length > 0 || !this.counts) {
        this.counts = this.table.counts();
        ev.proxies = { upsert: d.upsert, remove: d.remove, counts: this.counts };
        changed = true;
      }
      // The table shares the event loop with the pushes: a rebuild that took long waits in proportion.
      const took = performance.now() - started;
      const [duty, minTicks] = this.pushing() ? [PROXIES_MAX_DUTY_PUSHING, PROXIES_PUSHING_MIN_TICKS] : [PROXIES_MAX_DUTY, 1];
      this.proxiesNextTick = tick + Math.max(minTicks, Math.ceil(took / duty / TICK_MS));
    }
    const trackerRev = this.src.tracker.revision();
    // Bytes of a push arrive with the responses (volume) after the tracker saw the change.
    if (trackerRev !== this.changesRev.tracker || volumeRev !== this.changesRev.volume || !this.changes) {
      this.changesRev = { tracker: trackerRev, volume: volumeRev };
      const views = changeViews(this.src.tracker.summaries(), this.src.store.snapshot(), (v) => this.src.volume.volume(v));
      const key = JSON.stringify(views);
      if (key !== this.changes?.key) {
        this.changes = { views, key };
        ev.changes = views;
        changed = true;
      }
    }
    if (ev.changes || tick % HISTOGRAM_EVERY_TICKS === 0 || !this.histogram) {
      const view = convergenceHistogram(this.src.tracker.completions(now - HISTOGRAM_WINDOW_MS), HISTOGRAM_WINDOW_MS);
      const key = JSON.stringify(view);
      if (key !== this.histogram?.key) {
        this.histogram = { view, key };
        ev.histogram = view;
        changed = true;
      }
    }
    if (tick % HEALTH_EVERY_TICKS === 0 || !this.health) {
      this.maybeAnalyze(now);
      const rejected = rejectedObjects(this.src.store.errors());
      const view: HealthView = { rejected: rejected.list, rejectedTotal: rejected.total, ...this.analysis };
      const key = JSON.stringify(view);
      if (key !== this.health?.key) {
        this.health = { view, key };
        ev.health = view;
        changed = true;
      }
    }
    if (tick % LOAD_EVERY_TICKS === 0) {
      ev.load = { append: [this.load.sample(now)] };
      changed = true;
    }
    if (!changed) return undefined;
    ev.seq = ++this.seq;
    return ev;
  }

  private fullEvent(): ConsoleEvent {
    return {
      seq: this.seq,
      at: this.now(),
      full: true,
      summary: this.summary ?? this.currentSummary(),
      proxies: { rows: this.table.all(), counts: this.counts ?? this.table.counts() },
      changes: this.changes?.views ?? [],
      ...(this.histogram ? { histogram: this.histogram.view } : {}),
      ...(this.health ? { health: this.health.view } : {}),
      load: { samples: this.load.history() },
    };
  }

  private currentSummary(): Summary {
    const push = this.src.xds.push();
    return { connected: this.src.xds.connectionList().length, pushVersion: push.version, services: push.registry.services.length };
  }

  /** Runs the analyzers after a config change, at most every ANALYSIS_MIN_INTERVAL_MS, one run at a time. */
  /** Whether pushes are queued or a change is still being ACKed (the console then takes less of the event loop). */
  private pushing(): boolean {
    const q = this.src.xds.queueDepth();
    return q.pending + q.processing > 0 || (this.changes?.views.some((v) => v.state === 'in-progress') ?? false);
  }

  private maybeAnalyze(now: number): void {
    const analyze = this.src.analyze;
    if (!analyze || !this.analysisDirty || this.analysisRunning || now - this.analysisStartedAt < ANALYSIS_MIN_INTERVAL_MS) return;
    // Analysis reads and checks the whole config directory on the event loop (~250 ms at 1,000
    // objects): it waits until the pushes are written and ACKed, so a change converges first.
    if (this.pushing() && now - this.analysisWantedAt < ANALYSIS_MAX_DEFER_MS) return;
    this.analysisDirty = false;
    this.analysisRunning = true;
    this.analysisStartedAt = now;
    analyze()
      .then(
        (analysis) => {
          this.analysis = { analysis, analyzedAt: this.now() };
        },
        (err: unknown) => {
          this.analysis = { analysisNote: `analysis failed: ${errorMessage(err)}`, analyzedAt: this.now() };
        },
      )
      .finally(() => {
        this.analysisRunning = false;
        // The result goes out with the next health refresh.
        this.health = undefined;
      });
  }

  private write(c: Client, text: string): void {
    c.lastWriteAt = this.now();
    c.res.write(text);
    // Past the socket's high-water mark events still queue (an event of 2,000 rows is larger than
    // it): treating that as blocked made every large event cost a whole state on the next drain.
    // Only a console this far behind skips events, and gets the whole state once it drained.
    if (c.res.writableLength > MAX_QUEUED_BYTES) c.blocked = true;
  }
}
