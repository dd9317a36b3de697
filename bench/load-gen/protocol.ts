/** Messages between bench/ads-bench.ts (parent) and the load-generator process (IPC). */

export interface StartMsg {
  readonly type: 'start';
  /** ADS server `host:port`. */
  readonly addr: string;
  /** Per simulated proxy, the Listener names (`host:port`) it subscribes to. */
  readonly plans: readonly (readonly string[])[];
  /** Give up on "all synced" after this long. */
  readonly syncTimeoutMs: number;
  /** Delta ADS (DeltaAggregatedResources) instead of state of the world. */
  readonly delta?: boolean;
}

export interface WatchMsg {
  readonly type: 'watch';
  /** Bytes that appear in a RouteConfiguration (or ClusterLoadAssignment, `in: 'eds'`) only after the change. */
  readonly marker: string;
  readonly in?: 'rds' | 'eds';
  /** Only proxies subscribed to this Listener are expected to see it. */
  readonly listener: string;
  readonly timeoutMs: number;
}

export interface StopMsg {
  readonly type: 'stop';
}

export type ToLoadGen = StartMsg | WatchMsg | StopMsg;

export interface ProgressMsg {
  readonly type: 'progress';
  readonly synced: number;
  readonly total: number;
}

export interface SyncedMsg {
  readonly type: 'synced';
  /** True when every proxy synced before the timeout. */
  readonly complete: boolean;
  readonly synced: number;
  readonly total: number;
  /** Epoch ms the first stream was opened / the last proxy synced. */
  readonly startedAt: number;
  readonly lastSyncedAt: number;
  /** Per proxy: ms from start to synced (null if it never did). */
  readonly syncMs: readonly (number | null)[];
  readonly bytes: number;
  readonly responses: Readonly<Record<string, number>>;
  readonly reconnects: number;
  readonly streamErrors: Readonly<Record<string, number>>;
}

export interface WatchingMsg {
  readonly type: 'watching';
  readonly watchers: number;
}

export interface ConvergedMsg {
  readonly type: 'converged';
  readonly complete: boolean;
  /** Per watching proxy: epoch ms its RDS response with the marker arrived (null if it never did). */
  readonly arrivals: readonly (number | null)[];
  /** Bytes received by all proxies since the watch began. */
  readonly bytes: number;
  /** Responses per type received since the watch began, by watchers and by the others. */
  readonly watcherResponses: Readonly<Record<string, number>>;
  readonly otherResponses: Readonly<Record<string, number>>;
  readonly otherProxies: number;
}

export interface FailedMsg {
  readonly type: 'failed';
  readonly error: string;
}

export type FromLoadGen = ProgressMsg | SyncedMsg | WatchingMsg | ConvergedMsg | FailedMsg;
