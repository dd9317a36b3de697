import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { TypeUrl } from './type-urls.js';

export type XdsCounter = 'pushContextErrors' | 'generateErrors';

/** istiod's buckets (seconds / bytes), as in pilot/pkg/xds/monitoring.go. */
const INIT_BUCKETS = [0.01, 0.1, 0.5, 1, 3, 5];
const PUSH_TIME_BUCKETS = [0.01, 0.1, 1, 3, 5, 10, 20, 30];
const DELAY_BUCKETS = [0.1, 0.5, 1, 3, 5, 10, 20, 30];
const SIZE_BUCKETS = [1, 10_000, 1_000_000, 4_000_000, 10_000_000, 40_000_000];

const SHORT_NAMES = new Set(['CDS', 'LDS', 'RDS', 'EDS', 'SDS', 'NDS']);
const SERVED_TYPES = new Set<string>(Object.values(TypeUrl));

/**
 * The key a type is counted under: its short name (CDS …) or served type URL; any type URL a
 * client made up counts as `other` — a label per made-up URL let one client grow /metrics and
 * these maps without bound (the xDS fuzzer sent thousands, some 4 KiB long).
 */
function typeKey(shortType: string): string {
  return SHORT_NAMES.has(shortType) || SERVED_TYPES.has(shortType) ? shortType : 'other';
}

/** istiod labels xDS types in lower case: cds, eds, lds, rds, sds, nds (debug types as they are, the rest `other`). */
export function typeLabel(shortType: string): string {
  const key = typeKey(shortType);
  return SHORT_NAMES.has(key) ? key.toLowerCase() : key;
}

/** What xds_cache_* read from: the server's resource cache (shared by its PushContexts). */
export interface CacheStatsSource {
  stats(): { size: number; hits: number; misses: number; evictions: number; invalidated?: number; clears?: number };
}

interface CacheTotals {
  hits: number;
  misses: number;
  evictions: number;
  size: number;
  invalidated?: number;
  clears?: number;
}

/**
 * Values for one histogram (or one labelled child) kept in a typed array and handed to prom-client
 * when it collects (a scrape) or when the array is full. A mesh-wide push observes a few values per
 * proxy, and prom-client checks and hashes the labels of each observation: a scrape does that for
 * all of them at once, off the push. What a scrape reports is the same.
 */
class BatchedObserver {
  readonly #values = new Float64Array(4096);
  #n = 0;

  constructor(private readonly target: { observe(value: number): void }) {}

  observe(value: number): void {
    if (this.#n === this.#values.length) this.flush();
    this.#values[this.#n++] = value;
  }

  flush(): void {
    for (let i = 0; i < this.#n; i++) this.target.observe(this.#values[i]!);
    this.#n = 0;
  }
}

/**
 * The server's metrics, with istiod's names and labels, on `registry`; `beforeCollect` runs before a
 * histogram of the push path is read; `pushCounts` are the responses sent by type key, read when
 * pilot_xds_pushes is collected (counted as plain numbers on the push path, not through prom-client,
 * which checks and hashes the labels of every call).
 */
function xdsMetrics(registry: Registry, beforeCollect: () => void, pushCounts: ReadonlyMap<string, number>) {
  const collect = (): void => beforeCollect();
  return {
    xdsConnected: new Gauge({
      name: 'pilot_xds',
      help: 'Number of endpoints connected to this pilot using XDS.',
      labelNames: ['version'],
      registers: [registry],
    }),
    pushes: new Counter({
      name: 'pilot_xds_pushes',
      help: 'Pilot build and send errors for lds, rds, cds and eds.',
      labelNames: ['type'],
      registers: [registry],
      collect() {
        this.reset();
        for (const [key, n] of pushCounts) this.inc({ type: typeLabel(key) }, n);
      },
    }),
    rejects: new Counter({
      name: 'pilot_total_xds_rejects',
      help: 'Total number of XDS responses from pilot rejected by proxy.',
      labelNames: ['type'],
      registers: [registry],
    }),
    inboundUpdates: new Counter({
      name: 'pilot_inbound_updates',
      help: 'Total number of updates received by pilot.',
      labelNames: ['type'],
      registers: [registry],
    }),
    pushTriggers: new Counter({
      name: 'pilot_push_triggers',
      help: 'Total number of times a push was triggered, labeled by reason for the push.',
      labelNames: ['type'],
      registers: [registry],
    }),
    internalErrors: new Counter({
      name: 'pilot_total_xds_internal_errors',
      help: 'Total number of internal XDS errors in pilot.',
      registers: [registry],
    }),
    initSeconds: new Histogram({
      name: 'pilot_pushcontext_init_seconds',
      help: 'Total time in seconds Pilot takes to init pushContext.',
      buckets: INIT_BUCKETS,
      registers: [registry],
    }),
    debounceSeconds: new Histogram({
      name: 'pilot_debounce_time',
      help: 'Delay in seconds between the first config enters debouncing and the merged push request is pushed into the push queue.',
      buckets: PUSH_TIME_BUCKETS,
      registers: [registry],
    }),
    pushTime: new Histogram({
      name: 'pilot_xds_push_time',
      help: 'Total time in seconds Pilot takes to push lds, rds, cds and eds.',
      labelNames: ['type'],
      buckets: PUSH_TIME_BUCKETS,
      registers: [registry],
      collect,
    }),
    queueTime: new Histogram({
      name: 'pilot_proxy_queue_time',
      help: 'Time in seconds, a proxy is in the push queue before being dequeued.',
      buckets: DELAY_BUCKETS,
      registers: [registry],
      collect,
    }),
    configSize: new Histogram({
      name: 'pilot_xds_config_size_bytes',
      help: 'Distribution of configuration sizes pushed to clients',
      labelNames: ['type'],
      buckets: SIZE_BUCKETS,
      registers: [registry],
      collect,
    }),
    convergence: new Histogram({
      name: 'pilot_proxy_convergence_time',
      help: 'Delay in seconds between config change and a proxy receiving all required configuration.',
      buckets: DELAY_BUCKETS,
      registers: [registry],
      collect,
    }),
    services: new Gauge({ name: 'pilot_services', help: 'Total services known to pilot.', registers: [registry] }),
    planSeconds: new Histogram({
      name: 'meshpilot_push_plan_seconds',
      help: 'Time in seconds from a debounced change to its pushes being queued: change set, cache invalidation, PushContext, choosing the proxies (per-proxy generation and sending not included).',
      buckets: PUSH_TIME_BUCKETS,
      registers: [registry],
    }),
    oversized: new Counter({
      name: 'meshpilot_xds_oversized_responses_total',
      help: 'xDS responses larger than the 4 MiB a gRPC client accepts by default.',
      labelNames: ['type'],
      registers: [registry],
    }),
  };
}

/**
 * The xDS server's counters, exported with istiod's metric names and labels on the registry it
 * is given (the process's, created where the process is wired; no global state), and summarised
 * for the debug endpoints.
 */
interface PerTypeMetrics {
  readonly configSize: { observe(value: number): void };
  readonly pushTime: { observe(value: number): void };
}

export class XdsStats {
  readonly registry: Registry;
  private readonly counters: Record<XdsCounter, number> = { pushContextErrors: 0, generateErrors: 0 };
  private readonly pushCounts = new Map<string, number>();
  private readonly perTypeMetrics = new Map<string, PerTypeMetrics>();
  /** Observations of the push path not yet handed to prom-client (see BatchedObserver). */
  private readonly batched: BatchedObserver[] = [];
  private readonly convergence: BatchedObserver;
  private readonly queueTime: BatchedObserver;
  private readonly rejectCounts = new Map<string, number>();
  private readonly skippedCounts = new Map<string, number>();
  private readonly oversizedCounts = new Map<string, number>();
  private bytes = 0;
  private inbound = 0;
  private lastInitMs = 0;
  private cacheSource: (() => CacheStatsSource | undefined) | undefined;
  /** Totals of the caches of PushContexts that were replaced (each PushContext has its own cache). */
  private readonly retiredCache: CacheTotals = { hits: 0, misses: 0, evictions: 0, size: 0 };
  private currentCache: CacheStatsSource | undefined;
  /** Its metrics on the registry it was given. */
  private readonly m: ReturnType<typeof xdsMetrics>;

  constructor(registry: Registry = new Registry()) {
    this.registry = registry;
    this.m = xdsMetrics(
      registry,
      () => {
        for (const b of this.batched) b.flush();
      },
      this.pushCounts,
    );
    this.convergence = this.batch(this.m.convergence);
    this.queueTime = this.batch(this.m.queueTime);
    // Read at scrape time from the current PushContext's cache; counters stay monotonic across
    // PushContexts because a replaced cache's final counts are folded into the retired totals.
    const totals = (): CacheTotals => this.cacheTotals();
    new Counter({
      name: 'xds_cache_reads',
      help: 'Total number of xds cache xdsCacheReads.',
      labelNames: ['type'],
      registers: [this.registry],
      collect() {
        const t = totals();
        this.reset();
        this.inc({ type: 'hit' }, t.hits);
        this.inc({ type: 'miss' }, t.misses);
      },
    });
    new Counter({
      name: 'xds_cache_evictions',
      help: 'Total number of xds cache evictions.',
      registers: [this.registry],
      collect() {
        this.reset();
        this.inc(totals().evictions);
      },
    });
    new Counter({
      name: 'meshpilot_xds_cache_invalidations_total',
      help: 'Cache entries removed because a config change touched what they were built from (type entry), and whole-cache clears (type clear).',
      labelNames: ['type'],
      registers: [this.registry],
      collect() {
        const t = totals();
        this.reset();
        this.inc({ type: 'entry' }, t.invalidated ?? 0);
        this.inc({ type: 'clear' }, t.clears ?? 0);
      },
    });
    new Gauge({
      name: 'xds_cache_size',
      help: 'Current size of xds cache',
      registers: [this.registry],
      collect() {
        this.set(totals().size);
      },
    });
  }

  /** Where xds_cache_* come from; typically `() => ds.push().cache`. */
  observeCache(source: () => CacheStatsSource | undefined): void {
    this.cacheSource = source;
  }

  /** Cumulative cache reads/evictions over every PushContext so far, and the current size. */
  cacheTotals(): CacheTotals {
    let current: CacheStatsSource | undefined;
    try {
      current = this.cacheSource?.();
    } catch {
      current = undefined; // not started yet
    }
    if (current !== this.currentCache) {
      if (this.currentCache) {
        const s = this.currentCache.stats();
        this.retiredCache.hits += s.hits;
        this.retiredCache.misses += s.misses;
        this.retiredCache.evictions += s.evictions;
      }
      this.currentCache = current;
    }
    const s = current?.stats() ?? { size: 0, hits: 0, misses: 0, evictions: 0 };
    return {
      hits: this.retiredCache.hits + s.hits,
      misses: this.retiredCache.misses + s.misses,
      evictions: this.retiredCache.evictions + s.evictions,
      size: s.size,
      ...(s.invalidated !== undefined ? { invalidated: s.invalidated } : {}),
      ...(s.clears !== undefined ? { clears: s.clears } : {}),
    };
  }

  inc(counter: XdsCounter): void {
    this.counters[counter]++;
    this.m.internalErrors.inc();
  }

  recordInboundUpdate(type: string): void {
    this.inbound++;
    this.m.inboundUpdates.inc({ type });
  }

  recordPushTrigger(reason: string, n: number): void {
    this.m.pushTriggers.inc({ type: reason }, n);
  }

  recordPushContextInit(ms: number, services: number): void {
    this.lastInitMs = ms;
    this.m.initSeconds.observe(ms / 1000);
    this.m.services.set(services);
  }

  recordPushPlan(ms: number): void {
    this.m.planSeconds.observe(ms / 1000);
  }

  recordDebounce(ms: number): void {
    this.m.debounceSeconds.observe(ms / 1000);
  }

  recordConvergence(ms: number): void {
    this.convergence.observe(ms / 1000);
  }

  /** pilot_proxy_queue_time: a proxy's wait in the push queue. */
  recordQueueTime(ms: number): void {
    this.queueTime.observe(Math.max(0, ms) / 1000);
  }

  /** pilot_xds_push_time{type}: time spent pushing one type to one proxy. */
  recordPushTime(type: string, ms: number): void {
    this.perType(type).pushTime.observe(Math.max(0, ms) / 1000);
  }

  /** A response over the client's default 4 MiB receive limit (the response size guard). */
  recordOversizedResponse(type: string, bytes: number): void {
    void bytes; // the size goes to pilot_xds_config_size_bytes; here only the count
    this.oversizedCounts.set(typeKey(type), (this.oversizedCounts.get(typeKey(type)) ?? 0) + 1);
    this.m.oversized.inc({ type: typeLabel(type) });
  }

  setConnected(n: number): void {
    this.m.xdsConnected.set({ version: 'meshpilot' }, n);
  }

  lastPushContextInitMs(): number {
    return this.lastInitMs;
  }

  recordPush(type: string, bytes: number): void {
    this.pushCounts.set(typeKey(type), (this.pushCounts.get(typeKey(type)) ?? 0) + 1);
    this.bytes += bytes;
    this.perType(type).configSize.observe(bytes);
  }

  private batch(target: { observe(value: number): void }): BatchedObserver {
    const b = new BatchedObserver(target);
    this.batched.push(b);
    return b;
  }

  /**
   * The per-type children of the metrics every response records, looked up once per type: a
   * mesh-wide push records thousands of responses, and prom-client checks and hashes the labels
   * of every labelled call.
   */
  private perType(type: string): PerTypeMetrics {
    // By the counted key: a made-up type URL must not add an entry of its own.
    const key = typeKey(type);
    let per = this.perTypeMetrics.get(key);
    if (!per) {
      const labels = { type: typeLabel(type) };
      per = {
        configSize: this.batch(this.m.configSize.labels(labels)),
        pushTime: this.batch(this.m.pushTime.labels(labels)),
      };
      this.perTypeMetrics.set(key, per);
    }
    return per;
  }

  recordPushSkipped(type: string): void {
    this.skippedCounts.set(typeKey(type), (this.skippedCounts.get(typeKey(type)) ?? 0) + 1);
  }

  recordReject(type: string): void {
    this.rejectCounts.set(typeKey(type), (this.rejectCounts.get(typeKey(type)) ?? 0) + 1);
    this.m.rejects.inc({ type: typeLabel(type) });
  }

  snapshot(): {
    pushes: Record<string, number>;
    unchangedSkipped: Record<string, number>;
    rejects: Record<string, number>;
    oversized: Record<string, number>;
    bytesSent: number;
    inboundUpdates: number;
  } & Record<XdsCounter, number> {
    return {
      ...this.counters,
      inboundUpdates: this.inbound,
      pushes: Object.fromEntries(this.pushCounts),
      unchangedSkipped: Object.fromEntries(this.skippedCounts),
      rejects: Object.fromEntries(this.rejectCounts),
      oversized: Object.fromEntries(this.oversizedCounts),
      bytesSent: this.bytes,
    };
  }
}
