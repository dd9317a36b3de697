/**
 * Graceful shutdown of the xDS server (SIGTERM/SIGINT), bounded by --shutdownDuration:
 *
 * 1. readiness turns 503 (the load balancer stops sending new proxies here);
 * 2. new streams are refused with UNAVAILABLE, and every HTTP/2 connection gets a GOAWAY
 *    (grpc-js `tryShutdown`: listeners close, sessions close gracefully);
 * 3. drain: streams may end on their own for up to `drainMs` (ADS streams never do: a proxy keeps
 *    its stream until the server ends it);
 * 4. the remaining streams are ended with status UNAVAILABLE "server is shutting down" — a proper
 *    gRPC status in trailers, not a connection reset — so proxies reconnect to another replica;
 * 5. the connections then close by themselves; a client that keeps its connection open after
 *    the GOAWAY and after its streams have their status (some grpc-js channels do) gets it
 *    destroyed after a short grace (`forceShutdown`) — no stream is cut by that any more.
 */
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../util/log.js';
import type { StreamGate } from '../xds/index.js';

export const SHUTDOWN_STATUS_DETAILS = 'server is shutting down';

export interface ShutdownPlan {
  readonly grpcServer: grpc.Server;
  readonly gate: StreamGate;
  /** Turns readiness off (step 1). */
  readonly markNotReady: () => void;
  /** Whole budget, from the signal to the last connection closed (ms). */
  readonly durationMs: number;
  readonly logger: Logger;
}

export interface ShutdownSummary {
  /** Streams ended by us with UNAVAILABLE after the drain period. */
  readonly streamsEnded: number;
  /** Were idle connections left after the streams ended, and destroyed? */
  readonly connectionsDestroyed: boolean;
  readonly elapsedMs: number;
}

/**
 * The drain period within a shutdown budget: half of it, at most 5 s, so ending the streams and
 * closing the connections always fit in what is left.
 */
export function drainPeriodMs(durationMs: number): number {
  return Math.min(durationMs / 2, 5000);
}

/** Reserved at the end of the budget for closing the HTTP servers and the process exit. */
const EXIT_MARGIN_MS = 250;
/** How long connections may stay after their streams got a status, before they are destroyed. */
const CLOSE_GRACE_MS = 500;

function delay(ms: number): { promise: Promise<void>; cancel(): void } {
  let timer: NodeJS.Timeout | undefined;
  const promise = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, Math.max(0, ms));
  });
  return { promise, cancel: () => clearTimeout(timer) };
}

async function within(p: Promise<unknown>, ms: number): Promise<boolean> {
  const d = delay(ms);
  const won = await Promise.race([p.then(() => true), d.promise.then(() => false)]);
  d.cancel();
  return won;
}

export async function shutdownGrpc(plan: ShutdownPlan): Promise<ShutdownSummary> {
  const start = performance.now();
  const elapsed = (): number => performance.now() - start;
  const log = plan.logger;
  plan.markNotReady();
  plan.gate.drain();
  const closed = new Promise<void>((resolve) => plan.grpcServer.tryShutdown(() => resolve()));
  const drainMs = drainPeriodMs(plan.durationMs);
  log.info('draining xDS streams', { activeStreams: plan.gate.stats().active, drainMs, shutdownDurationMs: plan.durationMs });

  await within(plan.gate.idle(), drainMs);
  const streamsEnded = plan.gate.closeAll(grpc.status.UNAVAILABLE, SHUTDOWN_STATUS_DETAILS);
  if (streamsEnded > 0) log.info('ended remaining xDS streams', { streams: streamsEnded, status: 'UNAVAILABLE' });

  const left = Math.min(CLOSE_GRACE_MS, plan.durationMs - elapsed() - EXIT_MARGIN_MS);
  const connectionsDestroyed = !(await within(closed, left));
  if (connectionsDestroyed) {
    const still = plan.gate.stats().active;
    (still > 0 ? log.warn : log.info)('closing connections left open after the GOAWAY', { activeStreams: still });
    plan.grpcServer.forceShutdown();
  }
  return { streamsEnded, connectionsDestroyed, elapsedMs: Math.round(elapsed()) };
}
