import { isProxyRequest } from '../../model/index.js';
import { shortType } from '../type-urls.js';
import type { SentResponse, XdsObserver } from '../xds-observer.js';

/** What the pushes of one PushContext version wrote: responses, bytes, and the xDS types. */
export interface VersionVolume {
  readonly responses: number;
  readonly bytes: number;
  readonly types: readonly string[];
}

interface Tally {
  responses: number;
  bytes: number;
  readonly types: Set<string>;
}

/** Versions remembered (the propagation tracker keeps 50 changes). */
const VERSIONS_KEPT = 64;

/**
 * A switchable observer for live views (the web console): while at least one view is subscribed it
 * tallies, per push version, the bytes and types pushed, and counts stream events so a view can
 * tell cheaply whether anything moved since it last looked. With no view subscribed every method
 * returns at its first line: the push path pays one branch per event.
 */
export class PushVolume implements XdsObserver {
  private subscribers = 0;
  private readonly byVersion = new Map<string, Tally>();
  private rev = 0;

  /** Starts recording until the returned function is called (each subscriber calls it once). */
  subscribe(): () => void {
    this.subscribers++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.subscribers--;
      if (this.subscribers === 0) this.byVersion.clear();
    };
  }

  active(): boolean {
    return this.subscribers > 0;
  }

  /** Increases on every response, ACK, NACK, connect and disconnect while active. */
  revision(): number {
    return this.rev;
  }

  /** The tally of a version's pushes (undefined: nothing recorded, e.g. pushed before a view subscribed). */
  volume(version: string): VersionVolume | undefined {
    const t = this.byVersion.get(version);
    return t && { responses: t.responses, bytes: t.bytes, types: [...t.types].sort() };
  }

  pushStarted(_req: unknown, version: string): void {
    if (this.subscribers === 0) return;
    this.rev++;
    // Recorded at once: a push whose every response was skipped (the proxies held it already) shows 0, not "unknown".
    this.tally(version);
  }

  responseSent(_conn: unknown, sent: SentResponse): void {
    if (this.subscribers === 0) return;
    this.rev++;
    // A proxy's own request is not a push of the change (it is its subscription being answered).
    if (isProxyRequest(sent.req)) return;
    const t = this.tally(sent.version);
    t.responses++;
    t.bytes += sent.bytes;
    t.types.add(shortType(sent.typeUrl));
  }

  private tally(version: string): Tally {
    let t = this.byVersion.get(version);
    if (!t) {
      t = { responses: 0, bytes: 0, types: new Set() };
      this.byVersion.set(version, t);
      if (this.byVersion.size > VERSIONS_KEPT) {
        const oldest = this.byVersion.keys().next().value;
        if (oldest !== undefined) this.byVersion.delete(oldest);
      }
    }
    return t;
  }

  ackReceived(): void {
    if (this.subscribers > 0) this.rev++;
  }

  nackReceived(): void {
    if (this.subscribers > 0) this.rev++;
  }

  connected(): void {
    if (this.subscribers > 0) this.rev++;
  }

  disconnected(): void {
    if (this.subscribers > 0) this.rev++;
  }
}
