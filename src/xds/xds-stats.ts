import { Counter, Gauge, Histogram, Registry } from 'prom-client';

export type XdsCounter = 'pushContextErrors' | 'generateErrors';

/** istiod's convergence/push buckets (seconds). */
const PUSH_BUCKETS = [0.01, 0.1, 0.5, 1, 3, 5];
const SIZE_BUCKETS = [1, 10_000, 1_000_000, 4_000_000, 10_000_000, 40_000_000];

/** istiod labels xDS types in lower case: cds, eds, lds, rds, sds. */
function typeLabel(shortType: string): string {
  return shortType.length <= 3 ? shortType.toLowerCase() : shortType;
}

/**
 * The xDS server's counters, exported with istiod's metric names and labels on a registry owned
 * by this server (no global state), and summarised for the debug endpoints.
 */
export class XdsStats {
  readonly registry = new Registry();
  private readonly counters: Record<XdsCounter, number> = { pushContextErrors: 0, generateErrors: 0 };
  private readonly pushCounts = new Map<string, number>();
  private readonly rejectCounts = new Map<string, number>();
  private readonly skippedCounts = new Map<string, number>();
  private bytes = 0;
  private inbound = 0;
  private lastInitMs = 0;
  private readonly xdsConnected = new Gauge({ name: 'pilot_xds', help: 'Number of endpoints connected to this pilot using XDS.', labelNames: ['version'], registers: [this.registry] });
  private readonly pushes = new Counter({ name: 'pilot_xds_pushes', help: 'Pilot build and send errors for lds, rds, cds and eds.', labelNames: ['type'], registers: [this.registry] });
  private readonly rejects = new Counter({ name: 'pilot_total_xds_rejects', help: 'Total number of XDS responses from pilot rejected by proxy.', labelNames: ['type'], registers: [this.registry] });
  private readonly inboundUpdates = new Counter({ name: 'pilot_inbound_updates', help: 'Total number of updates received by pilot.', labelNames: ['type'], registers: [this.registry] });
  private readonly pushTriggers = new Counter({ name: 'pilot_push_triggers', help: 'Total number of times a push was triggered, labeled by reason for the push.', labelNames: ['type'], registers: [this.registry] });
  private readonly internalErrors = new Counter({ name: 'pilot_total_xds_internal_errors', help: 'Total number of internal XDS errors in pilot.', registers: [this.registry] });
  private readonly initSeconds = new Histogram({ name: 'pilot_pushcontext_init_seconds', help: 'Total time in seconds Pilot takes to init pushContext.', buckets: PUSH_BUCKETS, registers: [this.registry] });
  private readonly debounceSeconds = new Histogram({ name: 'pilot_debounce_time', help: 'Delay in seconds between the first config enters debouncing and the merged push request is pushed into the push queue.', buckets: PUSH_BUCKETS, registers: [this.registry] });
  private readonly configSize = new Histogram({ name: 'pilot_xds_config_size_bytes', help: 'Distribution of configuration sizes pushed to clients', labelNames: ['type'], buckets: SIZE_BUCKETS, registers: [this.registry] });
  private readonly convergence = new Histogram({ name: 'pilot_proxy_convergence_time', help: 'Delay in seconds between config change and a proxy receiving all required configuration.', buckets: [0.1, 0.5, 1, 3, 5, 10, 20, 30], registers: [this.registry] });
  private readonly services = new Gauge({ name: 'pilot_services', help: 'Total services known to pilot.', registers: [this.registry] });

  inc(counter: XdsCounter): void {
    this.counters[counter]++;
    this.internalErrors.inc();
  }

  recordInboundUpdate(type: string): void {
    this.inbound++;
    this.inboundUpdates.inc({ type });
  }

  recordPushTrigger(reason: string, n: number): void {
    this.pushTriggers.inc({ type: reason }, n);
  }

  recordPushContextInit(ms: number, services: number): void {
    this.lastInitMs = ms;
    this.initSeconds.observe(ms / 1000);
    this.services.set(services);
  }

  recordDebounce(ms: number): void {
    this.debounceSeconds.observe(ms / 1000);
  }

  recordConvergence(ms: number): void {
    this.convergence.observe(ms / 1000);
  }

  setConnected(n: number): void {
    this.xdsConnected.set({ version: 'meshpilot' }, n);
  }

  lastPushContextInitMs(): number {
    return this.lastInitMs;
  }

  recordPush(type: string, bytes: number): void {
    this.pushCounts.set(type, (this.pushCounts.get(type) ?? 0) + 1);
    this.bytes += bytes;
    this.pushes.inc({ type: typeLabel(type) });
    this.configSize.observe({ type: typeLabel(type) }, bytes);
  }

  recordPushSkipped(type: string): void {
    this.skippedCounts.set(type, (this.skippedCounts.get(type) ?? 0) + 1);
  }

  recordReject(type: string): void {
    this.rejectCounts.set(type, (this.rejectCounts.get(type) ?? 0) + 1);
    this.rejects.inc({ type: typeLabel(type) });
  }

  snapshot(): { pushes: Record<string, number>; unchangedSkipped: Record<string, number>; rejects: Record<string, number>; bytesSent: number; inboundUpdates: number } & Record<XdsCounter, number> {
    return {
      ...this.counters,
      inboundUpdates: this.inbound,
      pushes: Object.fromEntries(this.pushCounts),
      unchangedSkipped: Object.fromEntries(this.skippedCounts),
      rejects: Object.fromEntries(this.rejectCounts),
      bytesSent: this.bytes,
    };
  }
}
