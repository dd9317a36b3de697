import type { PushContext, PushRequest } from '../model/index.js';
import type { Logger } from '../util/log.js';
import type { Connection } from './connection.js';
import type { Clock } from '../util/clock.js';
import type { NameSets } from './name-sets.js';
import type { XdsResource } from './resource.js';
import type { WatchedResource } from './watched-resource.js';
import type { XdsObserver } from './xds-observer.js';
import type { XdsStats } from './xds-stats.js';
import { TypeUrl } from './type-urls.js';

/**
 * What the two ADS protocols (SotW in sotw-stream.ts, Delta in delta-stream.ts) need from the
 * DiscoveryServer: the shared generators and snapshot, nonces, stats and observers. They are peers
 * over this one seam; connection bookkeeping and push planning stay in the server.
 */
export interface StreamHost {
  readonly log: Logger;
  readonly stats: XdsStats;
  readonly clock: Clock;
  readonly maxResponseBytes: number;
  push(): PushContext;
  /** The shared generator path (one cache for both protocols); undefined when generation failed. */
  generate(conn: Connection, typeUrl: string, w: WatchedResource, push: PushContext, req: PushRequest): readonly XdsResource[] | undefined;
  nextNonce(): string;
  /** Whether a type is served on Delta ADS only (ztunnel's): SotW requests for it are refused. */
  deltaOnly(conn: Connection, typeUrl: string): boolean;
  /** The stored sets of subscription lists (shared between streams that subscribe the same names). */
  readonly nameSets: NameSets;
  /** A NACK: counted, reported to observers and logged at warn (one place for SotW and Delta). */
  recordNack(conn: Connection, typeUrl: string, nonce: string, message: string, fields: Record<string, unknown>): void;
  notify<K extends keyof XdsObserver>(event: K, ...args: Parameters<NonNullable<XdsObserver[K]>>): void;
  /** A health report (HealthInformation request) of the stream's proxy. */
  onHealth(conn: Connection, errorDetail: RequestBasics['errorDetail']): void;
}

/** One protocol's side of a stream: requests in, responses of one type out. */
export interface StreamProtocol<R> {
  onRequest(conn: Connection, req: R): Promise<void>;
  /**
   * Sends what a push (`answer` false) or a request's answer has for one type. `resend`: names due
   * even when the proxy holds them unchanged. Returns, for CDS, the clusters sent that EDS must
   * follow with; NOTHING_SENT otherwise.
   */
  sendType(
    conn: Connection,
    typeUrl: string,
    push: PushContext,
    req: PushRequest,
    answer: boolean,
    opts?: { readonly resend?: ReadonlySet<string> },
  ): Promise<ReadonlySet<string>>;
}

/** What a send changed that EDS must follow with, when it changed nothing (or was not CDS). */
export const NOTHING_SENT: ReadonlySet<string> = new Set();

/** What every request of either protocol is read for first. */
export interface RequestBasics {
  readonly typeUrl: string;
  readonly errorDetail?: { readonly code: number; readonly message: string };
}

/**
 * The type and error detail of a request, or undefined for one neither protocol acts on: without a
 * type URL (logged), or a health report, which goes to the host and is never answered (istiod's
 * handleWorkloadHealthcheck).
 */
export function requestBasics(
  host: StreamHost,
  conn: Connection,
  req: { readonly typeUrl: string; readonly errorDetail?: { readonly code: number; readonly message: string } | undefined },
): RequestBasics | undefined {
  if (req.typeUrl === '') {
    host.log.debug('request without type_url ignored', { proxy: conn.proxy.id, delta: conn.delta });
    return undefined;
  }
  if (req.typeUrl === TypeUrl.HealthInformation) {
    host.onHealth(conn, req.errorDetail ? { code: req.errorDetail.code, message: req.errorDetail.message } : undefined);
    return undefined;
  }
  return req.errorDetail
    ? { typeUrl: req.typeUrl, errorDetail: { code: req.errorDetail.code, message: req.errorDetail.message } }
    : { typeUrl: req.typeUrl };
}
