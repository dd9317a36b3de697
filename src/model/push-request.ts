/**
 * istiod's PushRequest: what changed and why, carried from a config/registry event through the
 * debouncer and the per-connection push queue to the generators. Values are immutable: every
 * operation returns a new request so one request can be shared by many connections.
 */

/** Why a push was triggered; the strings are istiod's (they label pilot_push_triggers{type}). */
export type TriggerReason =
  | 'endpoint'
  | 'headlessendpoint'
  | 'config'
  | 'service'
  | 'proxy'
  | 'global'
  | 'ambient'
  | 'unknown'
  | 'debug'
  | 'secret'
  | 'networks'
  | 'proxyrequest'
  | 'namespace'
  | 'cluster';

/** istiod's constant names for the reasons (e.g. `TriggerReasons.UnknownTrigger === 'unknown'`). */
export const TriggerReasons = {
  EndpointUpdate: 'endpoint',
  HeadlessEndpointUpdate: 'headlessendpoint',
  ConfigUpdate: 'config',
  ServiceUpdate: 'service',
  ProxyUpdate: 'proxy',
  GlobalUpdate: 'global',
  AmbientUpdate: 'ambient',
  UnknownTrigger: 'unknown',
  DebugTrigger: 'debug',
  SecretTrigger: 'secret',
  NetworksTrigger: 'networks',
  ProxyRequest: 'proxyrequest',
  NamespaceUpdate: 'namespace',
  ClusterUpdate: 'cluster',
} as const satisfies Record<string, TriggerReason>;

export interface PushRequest {
  /** Full push (CDS/LDS/RDS + PushContext rebuild); false means EDS-only. */
  readonly full: boolean;
  /**
   * Changed configs as `Kind/namespace/name` (configKeyString). Empty means "everything": the
   * push is not scoped, every proxy is a candidate.
   */
  readonly configsUpdated: ReadonlySet<string>;
  /** Trigger counts; not de-duplicated on merge so metrics count every event. */
  readonly reason: ReadonlyMap<TriggerReason, number>;
  /** When the first event of this request happened (ms, from the injected clock). */
  readonly start: number;
  /** Push even if the proxy would be skipped as unchanged. */
  readonly forced?: boolean;
  /**
   * EDS-only requests: the ClusterLoadAssignment names of the hosts whose endpoints changed, so
   * only those are regenerated and sent (istiod's EDS-only ConfigsUpdated). Absent: every watched one.
   */
  readonly edsNames?: ReadonlySet<string>;
}

export interface PushRequestInit {
  readonly full?: boolean;
  readonly configsUpdated?: Iterable<string>;
  /** One reason (counted once), or counts per reason. */
  readonly reason?: TriggerReason | ReadonlyMap<TriggerReason, number>;
  readonly start: number;
  readonly forced?: boolean;
  readonly edsNames?: Iterable<string>;
}

const EMPTY_KEYS: ReadonlySet<string> = new Set<string>();
const NO_REASON: ReadonlyMap<TriggerReason, number> = new Map<TriggerReason, number>();

/** Builds a PushRequest (copies its inputs, so callers may reuse their collections). */
export function pushRequest(init: PushRequestInit): PushRequest {
  const configsUpdated = init.configsUpdated === undefined ? EMPTY_KEYS : new Set(init.configsUpdated);
  let reason: ReadonlyMap<TriggerReason, number>;
  if (init.reason === undefined) reason = NO_REASON;
  else if (typeof init.reason === 'string') reason = new Map([[init.reason, 1]]);
  else reason = new Map(init.reason);
  const edsNames = init.edsNames === undefined ? undefined : new Set(init.edsNames);
  return freeze(init.full ?? false, configsUpdated, reason, init.start, init.forced ?? false, edsNames);
}

/**
 * Merges two requests (istiod's CopyMerge): full if either is; keys are the union, except that an
 * empty set on either side means "everything" and wins (the merge must never narrow a push);
 * reasons are summed; start is the earlier; forced if either is. Inputs are not modified.
 */
export function mergePushRequests(a: PushRequest, b: PushRequest): PushRequest {
  let configsUpdated: ReadonlySet<string>;
  if (a.configsUpdated.size === 0 || b.configsUpdated.size === 0) configsUpdated = EMPTY_KEYS;
  else {
    const union = new Set(a.configsUpdated);
    for (const k of b.configsUpdated) union.add(k);
    configsUpdated = union;
  }
  let reason: ReadonlyMap<TriggerReason, number>;
  if (b.reason.size === 0) reason = a.reason;
  else if (a.reason.size === 0) reason = b.reason;
  else {
    const sum = new Map(a.reason);
    for (const [r, n] of b.reason) sum.set(r, (sum.get(r) ?? 0) + n);
    reason = sum;
  }
  // EDS names narrow only while both sides are narrowed; a full request makes them moot.
  const edsNames = a.full || b.full || !a.edsNames || !b.edsNames ? undefined : new Set([...a.edsNames, ...b.edsNames]);
  return freeze(a.full || b.full, configsUpdated, reason, Math.min(a.start, b.start), (a.forced ?? false) || (b.forced ?? false), edsNames);
}

/** Total number of trigger events merged into the request. */
export function reasonCount(req: PushRequest): number {
  let n = 0;
  for (const v of req.reason.values()) n += v;
  return n;
}

/** True when the only trigger is the proxy's own request (istiod's IsRequest). */
export function isProxyRequest(req: PushRequest): boolean {
  return req.reason.size === 1 && req.reason.has('proxyrequest');
}

function freeze(
  full: boolean,
  configsUpdated: ReadonlySet<string>,
  reason: ReadonlyMap<TriggerReason, number>,
  start: number,
  forced: boolean,
  edsNames: ReadonlySet<string> | undefined,
): PushRequest {
  // Optional fields are left out when unset so requests compare equal with deepStrictEqual.
  return Object.freeze({
    full,
    configsUpdated,
    reason,
    start,
    ...(forced ? { forced } : {}),
    ...(edsNames && !full ? { edsNames } : {}),
  });
}
