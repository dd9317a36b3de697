export type XdsCounter = 'inboundUpdates' | 'pushContextErrors' | 'generateErrors';

/**
 * Counters of the xDS server, read by debug endpoints and (later) exported as istiod's Prometheus
 * metrics (pilot_xds_pushes{type}, pilot_total_xds_rejects{type}, pilot_inbound_updates …).
 */
export class XdsStats {
  private readonly counters: Record<XdsCounter, number> = { inboundUpdates: 0, pushContextErrors: 0, generateErrors: 0 };
  private readonly pushes = new Map<string, number>();
  private readonly rejects = new Map<string, number>();
  private bytes = 0;
  private lastInitMs = 0;

  inc(counter: XdsCounter): void {
    this.counters[counter]++;
  }

  recordPushContextInit(ms: number): void {
    this.lastInitMs = ms;
  }

  lastPushContextInitMs(): number {
    return this.lastInitMs;
  }

  recordPush(type: string, bytes: number): void {
    this.pushes.set(type, (this.pushes.get(type) ?? 0) + 1);
    this.bytes += bytes;
  }

  recordReject(type: string): void {
    this.rejects.set(type, (this.rejects.get(type) ?? 0) + 1);
  }

  snapshot(): { pushes: Record<string, number>; rejects: Record<string, number>; bytesSent: number } & Record<XdsCounter, number> {
    return {
      ...this.counters,
      pushes: Object.fromEntries(this.pushes),
      rejects: Object.fromEntries(this.rejects),
      bytesSent: this.bytes,
    };
  }
}
