/** Messages between a bench (parent) and a load-generator process (IPC). */

/** `sidecar` and `router`: Envoy; `proxyless`: a gRPC client (node metadata GENERATOR: grpc). */
export type ProxyKind = 'sidecar' | 'router' | 'proxyless';
export type ShortType = 'lds' | 'rds' | 'cds' | 'eds';

/** One simulated proxy: its node, and for a proxyless client the listeners it asks for. */
export interface ProxyPlan {
  readonly kind: ProxyKind;
  /** Pod name; the node id is `<sidecar|router>~<ip>~<pod>.<namespace>~<namespace>.svc.cluster.local`. */
  readonly pod: string;
  readonly namespace: string;
  readonly ip: string;
  /** Workload labels (node metadata LABELS). */
  readonly labels?: Readonly<Record<string, string>>;
  /** Proxyless only: the Listener names (`host:port`) it subscribes to. */
  readonly listeners?: readonly string[];
}

export interface StartMsg {
  readonly type: 'start';
  /** ADS server `host:port`. */
  readonly addr: string;
  readonly proxies: readonly ProxyPlan[];
  /** Give up on "all synced" after this long. */
  readonly syncTimeoutMs: number;
  /** Delta ADS (DeltaAggregatedResources) instead of state of the world. */
  readonly delta: boolean;
  /** Streams opened per event-loop turn (the rest follow on the next turns). */
  readonly connectBatch?: number;
}

/**
 * Which proxies a change is expected to reach, decided from what each holds when the watch
 * begins (so the expectation follows meshpilot's actual scoping, not a model of it).
 */
export interface ProxyFilter {
  readonly kinds?: readonly ProxyKind[];
  readonly namespaces?: readonly string[];
  /** Holds a resource of `type` whose name includes `name` and whose bytes include `bytes`. */
  readonly holding?: { readonly type: ShortType; readonly name?: string; readonly bytes?: string };
}

/**
 * When an expected proxy has converged: checked after each of its responses of `type`, over the
 * resources of that type it then holds whose name includes `scope` (all when unset).
 */
export interface Until {
  readonly type: ShortType;
  readonly scope?: string;
  /** Each string appears in some scoped resource. */
  readonly contains?: readonly string[];
  /** No scoped resource contains any of these. */
  readonly lacks?: readonly string[];
  /** Some scoped resource differs from (or is missing compared to) what was held when the watch began. */
  readonly changed?: boolean;
}

export interface WatchMsg {
  readonly type: 'watch';
  readonly expect: ProxyFilter;
  readonly until: Until;
  /** Give up on the expected proxies this long after `written`. */
  readonly timeoutMs: number;
  /** After convergence, report only once no proxy received anything for this long … */
  readonly quietMs: number;
  /** … and at least this long after `written` (so over-pushes to others are seen). */
  readonly minSettleMs: number;
}

/** The bench finished writing the change (epoch ms of its last write). */
export interface WrittenMsg {
  readonly type: 'written';
  readonly at: number;
}

export interface StopMsg {
  readonly type: 'stop';
}

export type ToLoadGen = StartMsg | WatchMsg | WrittenMsg | StopMsg;

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
  /** Per proxy: ms from the load generator's start to synced (null if it never did). */
  readonly syncMs: readonly (number | null)[];
  /** Per proxy: ms from its own stream's opening to synced (null if it never did). */
  readonly ownSyncMs: readonly (number | null)[];
  readonly bytes: number;
  readonly responses: Readonly<Record<string, number>>;
  readonly reconnects: number;
  readonly streamErrors: Readonly<Record<string, number>>;
  /** Distinct resources the process holds (interned). */
  readonly distinctResources: number;
}

export interface WatchingMsg {
  readonly type: 'watching';
  readonly expected: number;
}

/** Responses and proxies reached, for one group of proxies (expected, or the others). */
export interface GroupReach {
  readonly proxies: number;
  /** Proxies of the group that received at least one response. */
  readonly reached: number;
  readonly responses: Readonly<Record<string, number>>;
  /** Responses that changed nothing the receiving proxy held (identical resources re-sent). */
  readonly noopResponses: number;
  readonly bytes: number;
}

export interface ConvergedMsg {
  readonly type: 'converged';
  /** Every expected proxy converged before the timeout. */
  readonly complete: boolean;
  /** Per expected proxy: epoch ms of the response that made it converge (null if none did). */
  readonly arrivals: readonly (number | null)[];
  readonly expected: GroupReach;
  readonly others: GroupReach;
  /** Proxies of each kind among the others that received anything. */
  readonly othersReachedByKind: Readonly<Record<string, number>>;
  /** Epoch ms of the last response any proxy received during the watch (0 if none). */
  readonly lastResponseAt: number;
}

export interface FailedMsg {
  readonly type: 'failed';
  readonly error: string;
}

export type FromLoadGen = ProgressMsg | SyncedMsg | WatchingMsg | ConvergedMsg | FailedMsg;
