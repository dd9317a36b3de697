import { isProxyRequest, type PushRequest } from '../../model/index.js';
import type { Connection } from '../connection.js';
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
}

/**
 * Records pilot_proxy_queue_time, which the server does not record itself, from the observer
 * events: queuedAt (proxyPushed) → the proxy's first response of that push (or the end of the push
 * when every type was unchanged). The server reports no dequeue event, so this includes generating
 * the first type. (pilot_xds_push_time is measured by the server around each generate + send.)
 * Proxy-initiated responses (reason proxyrequest) are not pushes and are not timed.
 */
export function metricsObserver(stats: () => XdsStats, clock: NowClock): XdsObserver {
  const inFlight = new WeakMap<Connection, InFlight>();
  return {
    responseSent(conn: Connection, sent: SentResponse): void {
      if (isProxyRequest(sent.req)) return;
      const f = inFlight.get(conn);
      if (f && f.req === sent.req) return;
      inFlight.set(conn, { req: sent.req, firstAt: clock.now() });
    },
    proxyPushed(conn: Connection, req: PushRequest, queuedAt: number): void {
      const now = clock.now();
      const f = inFlight.get(conn);
      inFlight.delete(conn);
      if (f && f.req === req) {
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
