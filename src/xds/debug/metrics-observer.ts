import { isProxyRequest, type PushRequest } from '../../model/push-request.js';
import type { Connection } from '../connection.js';
import { shortType } from '../type-urls.js';
import type { SentResponse, XdsObserver } from '../xds-observer.js';
import type { XdsStats } from '../xds-stats.js';

/** Milliseconds; the server's clock (only differences matter). */
export interface NowClock {
  now(): number;
}

interface InFlight {
  readonly req: PushRequest;
  /** When the first response of this push went out (≈ dequeue + first generation). */
  readonly firstAt: number;
  /** Type and time of the last response of this push, not yet given a push time. */
  lastType: string;
  lastAt: number;
}

/**
 * Records the timing metrics the server does not record itself, from the observer events:
 * - pilot_proxy_queue_time: queuedAt (proxyPushed) → the proxy's first response of that push (or
 *   the end of the push when every type was unchanged). The server reports no dequeue event, so
 *   this includes generating the first type.
 * - pilot_xds_push_time{type}: from a type's response being handed to the stream until the next
 *   response of the same push (or the end of the push): the send, with backpressure, plus the
 *   next type's generation.
 * Proxy-initiated responses (reason proxyrequest) are not pushes and are not timed.
 */
export function metricsObserver(stats: () => XdsStats, clock: NowClock): XdsObserver {
  const inFlight = new WeakMap<Connection, InFlight>();
  const closeLast = (f: InFlight, at: number): void => {
    stats().recordPushTime(f.lastType, at - f.lastAt);
  };
  return {
    responseSent(conn: Connection, sent: SentResponse): void {
      if (isProxyRequest(sent.req)) return;
      const now = clock.now();
      const f = inFlight.get(conn);
      if (f && f.req === sent.req) {
        closeLast(f, now);
        f.lastType = shortType(sent.typeUrl);
        f.lastAt = now;
        return;
      }
      inFlight.set(conn, { req: sent.req, firstAt: now, lastType: shortType(sent.typeUrl), lastAt: now });
    },
    proxyPushed(conn: Connection, req: PushRequest, queuedAt: number): void {
      const now = clock.now();
      const f = inFlight.get(conn);
      inFlight.delete(conn);
      if (f && f.req === req) {
        closeLast(f, now);
        stats().recordQueueTime(f.firstAt - queuedAt);
      } else {
        stats().recordQueueTime(now - queuedAt);
      }
    },
    disconnected(conn: Connection): void {
      inFlight.delete(conn);
    },
  };
}
