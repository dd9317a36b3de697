import { joinedParts, joinResources, type JoinedParts, type XdsResource } from './resource.js';
import { LayeredVersions, OverlayVersions } from './layered-versions.js';
import { isWildcardType } from './type-urls.js';
import { unsharedNameSets, type NameSets } from './name-sets.js';
import type { NackInfo, WatchedResource } from './watched-resource.js';

/** The fields of a DeltaDiscoveryRequest the decision logic looks at. */
export interface DeltaRequestView {
  readonly typeUrl: string;
  readonly subscribe: readonly string[];
  readonly unsubscribe: readonly string[];
  /** What the client already holds (name → version), sent on the first request of a new stream. */
  readonly initialVersions: Readonly<Record<string, string>>;
  readonly responseNonce: string;
  readonly errorDetail?: { readonly code: number; readonly message: string };
}

export type DeltaKind = 'initial' | 'reconnect' | 'ack' | 'nack' | 'subscribe' | 'unsubscribe';

export interface DeltaDecision {
  readonly kind: DeltaKind;
  readonly respond: boolean;
  readonly next: WatchedResource;
  /** Names this request newly subscribed (those that do not exist are answered as removed). */
  readonly requested: ReadonlySet<string>;
}

const WILDCARD = '*';
const NONE: ReadonlySet<string> = new Set();

/**
 * istiod's shouldRespondDelta. Subscription changes are deltas and are applied from every request
 * (a lost one could never be recovered); the nonce only drives ACK bookkeeping:
 * - a NACK (error_detail) is recorded and never answered (no re-push loop);
 * - the first request for a type is always answered (with `alwaysRespond`, even when nothing
 *   differs from `initial_resource_versions`, so the client's initial fetch completes); an empty
 *   subscribe list on LDS/CDS (legacy wildcard) or `*` makes the watch wildcard;
 * - later requests are answered only when they subscribe to something new; an unsubscribe just
 *   forgets the names (the spec forbids sending removals for them).
 */
export function decideDelta(
  w: WatchedResource | undefined,
  req: DeltaRequestView,
  now: number,
  sets: NameSets = unsharedNameSets,
): DeltaDecision {
  const unsub = new Set(req.unsubscribe);
  if (!w) {
    const wildcard = (req.subscribe.length === 0 && isWildcardType(req.typeUrl)) || req.subscribe.includes(WILDCARD);
    const names = sets.of(req.subscribe.filter((n) => n !== WILDCARD && !unsub.has(n)));
    const versions = Object.entries(req.initialVersions).filter(([name]) => wildcard || names.has(name));
    const held: ReadonlyMap<string, string> = versions.length === 0 ? NOTHING_HELD : new Map(versions);
    const base: WatchedResource = { typeUrl: req.typeUrl, names, wildcard, sentVersions: held };
    if (req.errorDetail) return { kind: 'nack', respond: false, next: { ...base, lastError: nack(req, now) }, requested: new Set() };
    const kind: DeltaKind = held.size > 0 || req.responseNonce !== '' ? 'reconnect' : 'initial';
    return { kind, respond: true, next: { ...base, alwaysRespond: true }, requested: wildcard ? new Set() : names };
  }

  const acked = (next: WatchedResource): WatchedResource =>
    req.responseNonce === ''
      ? next
      : {
          ...next,
          nonceAcked: req.responseNonce,
          ...(req.responseNonce === w.nonceSent && w.versionSent !== undefined ? { versionAcked: w.versionSent } : {}),
        };
  if (req.subscribe.length === 0 && unsub.size === 0) {
    // A plain ACK or NACK (most requests): the subscriptions and what is held stay as they are, uncopied.
    const next = acked(w);
    if (req.errorDetail) return { kind: 'nack', respond: false, next: { ...next, lastError: nack(req, now) }, requested: NONE };
    return { kind: 'ack', respond: w.alwaysRespond === true, next, requested: NONE };
  }
  let wildcard = w.wildcard;
  if (req.subscribe.includes(WILDCARD)) wildcard = true;
  if (unsub.has(WILDCARD)) wildcard = false;
  const requested = new Set<string>();
  for (const n of req.subscribe) if (n !== WILDCARD && !w.names.has(n)) requested.add(n);
  const dropping = [...unsub].filter((n) => n !== WILDCARD && (w.names.has(n) || requested.has(n)));
  const dropped = dropping.length > 0;
  // Pooled: streams that made the same changes watch one set (and share what is built from it).
  const names = sets.changed(
    w.names,
    [...requested].filter((n) => !unsub.has(n)),
    dropping.filter((n) => w.names.has(n)),
  );
  const leavingWildcard = !wildcard && w.wildcard;
  // What the stream holds changes only when names leave it; a pure subscribe keeps the same map.
  let held: ReadonlyMap<string, string> = w.sentVersions ?? NOTHING_HELD;
  if ((dropped && !wildcard) || leavingWildcard) {
    const m = new Map(held);
    if (!wildcard) for (const n of dropping) m.delete(n);
    // Leaving wildcard: the client keeps only what it still names.
    if (leavingWildcard) for (const n of [...m.keys()]) if (!names.has(n)) m.delete(n);
    held = m;
  }
  const becameWildcard = wildcard && !w.wildcard;
  const next = acked({ ...w, names, wildcard, sentVersions: held });
  if (req.errorDetail) return { kind: 'nack', respond: false, next: { ...next, lastError: nack(req, now) }, requested };
  if (requested.size > 0 || becameWildcard) return { kind: 'subscribe', respond: true, next, requested };
  if (dropped || (w.wildcard && !wildcard)) return { kind: 'unsubscribe', respond: false, next, requested };
  return { kind: 'ack', respond: w.alwaysRespond === true, next, requested };
}

function nack(req: DeltaRequestView, now: number): NackInfo {
  return { nonce: req.responseNonce, message: req.errorDetail?.message ?? '', code: req.errorDetail?.code ?? 0, at: now };
}

export interface DeltaPlan {
  /** Resources whose version differs from what the stream holds (or that it does not hold). */
  readonly changed: readonly XdsResource[];
  /** Held names that no longer exist, plus newly requested names that do not exist. */
  readonly removed: readonly string[];
  /** What the proxy holds once this is applied. */
  readonly sentVersions: ReadonlyMap<string, string>;
}

/**
 * Per-resource diff of freshly generated resources against what this stream holds. Nothing is
 * re-encoded: the plan refers to the marshal-once resources. `resendAll` (a forced push) sends
 * every resource in scope regardless of version, `resend` those it names.
 */
export function planDelta(
  w: WatchedResource,
  resources: readonly XdsResource[],
  requested: ReadonlySet<string> = NONE,
  resendAll = false,
  only?: ReadonlySet<string>,
  resend?: ReadonlySet<string>,
): DeltaPlan {
  // A list joined from a shared head (a view's outbound clusters) and the proxy's own tail is
  // planned part by part: the head's plan is shared by every stream in step, the tail's is small.
  // Streams in step (the same held versions, the same joined list: replicas, and proxies whose own
  // part is alike) share the whole plan, so what each then holds is one shared object too.
  const parts = requested.size === 0 && !only && !resend ? joinedParts(resources) : undefined;
  const held = w.sentVersions ?? NOTHING_HELD;
  return (
    (parts && memoized(w, held, resources, resendAll ? 'parts|all' : 'parts', () => planParts(w, parts, resendAll))) ??
    memoPlan(w, held, resources, requested, resendAll, only, resend)
  );
}

function planParts(w: WatchedResource, parts: JoinedParts, resendAll: boolean): DeltaPlan | undefined {
  const held = w.sentVersions ?? NOTHING_HELD;
  const layered = held instanceof LayeredVersions;
  const head = memoPlan(w, layered ? held.head : held, parts.head, NONE, resendAll);
  // A name in both parts is planned as one list (the first occurrence wins there).
  if (parts.tail.some((r) => head.sentVersions.has(r.name))) return undefined;
  const tail = diffDelta(w, layered ? held.tail : held, parts.tail, NONE, resendAll, undefined, undefined);
  // Each part's diff reports as removed what the other part now has (a name that moved, or, for a
  // plain held map, every name of the other part).
  const removed = new Set<string>();
  for (const n of head.removed) if (!tail.sentVersions.has(n)) removed.add(n);
  for (const n of tail.removed) if (!head.sentVersions.has(n)) removed.add(n);
  // Joined, the shared head stays one list the response writes as one shared block.
  const changed =
    tail.changed.length === 0 ? head.changed : head.changed.length === 0 ? tail.changed : joinResources(head.changed, tail.changed);
  return { changed, removed: [...removed], sentVersions: new LayeredVersions(head.sentVersions, tail.sentVersions) };
}

/**
 * Streams in step hold the same map of versions (plans are shared), watch the same pooled names
 * and get the same shared list: their plan is computed once and shared, so a change that a
 * thousand proxies need costs one diff, and what they hold stays one map.
 */
function memoPlan(
  w: WatchedResource,
  held: ReadonlyMap<string, string>,
  resources: readonly XdsResource[],
  requested: ReadonlySet<string>,
  resendAll: boolean,
  only?: ReadonlySet<string>,
  resend?: ReadonlySet<string>,
): DeltaPlan {
  // A first request asks for every name it watches: keyed by that (pooled) set, not by its names.
  const asked = requested === w.names ? '=watched' : joined(requested);
  const options = `${resendAll ? 'all' : ''}|${only ? `only:${only === w.names ? '=watched' : joined(only)}` : ''}|${asked}|${resend ? joined(resend) : ''}`;
  // Never undefined: diffDelta always plans.
  return memoized(w, held, resources, options, () => diffDelta(w, held, resources, requested, resendAll, only, resend)) as DeltaPlan;
}

/** `compute()`'s plan for these held versions, resources, watched names and options: computed once, shared. */
function memoized(
  w: WatchedResource,
  held: ReadonlyMap<string, string>,
  resources: readonly XdsResource[],
  options: string,
  compute: () => DeltaPlan | undefined,
): DeltaPlan | undefined {
  const scope: object = w.wildcard ? WILDCARD_SCOPE : w.names;
  let byResources = planMemo.get(held);
  if (!byResources) planMemo.set(held, (byResources = new WeakMap()));
  let byScope = byResources.get(resources);
  if (!byScope) byResources.set(resources, (byScope = new WeakMap()));
  let byOptions = byScope.get(scope);
  if (!byOptions) byScope.set(scope, (byOptions = new Map()));
  const known = byOptions.get(options);
  if (known !== undefined) return known ?? undefined;
  const plan = compute();
  if (byOptions.size >= MAX_PLANS_PER_STATE) byOptions.delete(byOptions.keys().next().value as string);
  byOptions.set(options, plan ?? null);
  return plan;
}

/** What a stream holds before anything was sent (one map, so first plans are shared too). */
export const NOTHING_HELD: ReadonlyMap<string, string> = new Map();
const WILDCARD_SCOPE = {};
const MAX_PLANS_PER_STATE = 8;
/** held versions → resource list → watched names (or wildcard) → options → plan; all weak on the objects. */
const planMemo = new WeakMap<
  ReadonlyMap<string, string>,
  WeakMap<readonly XdsResource[], WeakMap<object, Map<string, DeltaPlan | null>>>
>();
const joined = (s: ReadonlySet<string>): string => (s.size === 0 ? '' : [...s].join('\n'));

function diffDelta(
  w: WatchedResource,
  held: ReadonlyMap<string, string>,
  resources: readonly XdsResource[],
  requested: ReadonlySet<string>,
  resendAll: boolean,
  only: ReadonlySet<string> | undefined,
  resend: ReadonlySet<string> | undefined,
): DeltaPlan {
  const inScope = (name: string): boolean => w.wildcard || w.names.has(name);
  if (only) return diffOnly(inScope, held, resources, requested, resendAll, only, resend);
  const next = new Map<string, string>();
  const changed: XdsResource[] = [];
  const seen = new Set<string>();
  for (const r of resources) {
    if (!inScope(r.name) || seen.has(r.name)) continue;
    seen.add(r.name);
    next.set(r.name, r.version);
    if (resendAll || resend?.has(r.name) === true || held.get(r.name) !== r.version) changed.push(r);
  }
  const removed: string[] = [];
  for (const name of held.keys()) if (!next.has(name)) removed.push(name);
  for (const name of requested) if (!next.has(name) && !held.has(name)) removed.push(name);
  return { changed, removed, sentVersions: next };
}

/**
 * A partial regeneration (`only`: EDS-only pushes, answers to newly subscribed names) leaves what
 * the stream holds outside `only` alone: the plan costs the names regenerated, not the names held.
 */
function diffOnly(
  inScope: (name: string) => boolean,
  held: ReadonlyMap<string, string>,
  resources: readonly XdsResource[],
  requested: ReadonlySet<string>,
  resendAll: boolean,
  only: ReadonlySet<string>,
  resend: ReadonlySet<string> | undefined,
): DeltaPlan {
  const fresh = new Map<string, string>();
  const changed: XdsResource[] = [];
  for (const r of resources) {
    if (!inScope(r.name) || fresh.has(r.name)) continue;
    fresh.set(r.name, r.version);
    if (resendAll || resend?.has(r.name) === true || held.get(r.name) !== r.version) changed.push(r);
  }
  const removed: string[] = [];
  for (const name of only) if (held.has(name) && !fresh.has(name)) removed.push(name);
  for (const name of requested) if (!fresh.has(name) && !held.has(name)) removed.push(name);
  return { changed, removed, sentVersions: OverlayVersions.over(held, fresh, removed) };
}

export interface DeltaChunk {
  readonly resources: readonly XdsResource[];
  readonly removed: readonly string[];
  /** Encoded size estimate of this response. */
  readonly bytes: number;
}

export interface SizeOf {
  readonly envelope: number;
  resource(r: XdsResource): number;
  removed(name: string): number;
  /** The bytes a whole list adds (a shared list's sum is kept, not walked per stream). */
  list?(rs: readonly XdsResource[]): number;
}

/**
 * Splits one logical Delta response into responses each within `limit` bytes (greedy, order kept);
 * a single resource larger than the limit goes alone (it cannot be split further). Removals ride in
 * the last response that has room. Always returns at least one (possibly empty) chunk.
 */
export function splitDelta(changed: readonly XdsResource[], removed: readonly string[], size: SizeOf, limit: number): DeltaChunk[] {
  if (size.list) {
    // The common case, one response: sized from the list's sum, without a walk of its resources.
    let bytes = size.envelope + size.list(changed);
    for (const name of removed) bytes += size.removed(name);
    if (bytes <= limit) return [{ resources: changed, removed, bytes }];
  }
  const chunks: DeltaChunk[] = [];
  let res: XdsResource[] = [];
  let rem: string[] = [];
  let bytes = size.envelope;
  const flush = (): void => {
    chunks.push({ resources: res, removed: rem, bytes });
    res = [];
    rem = [];
    bytes = size.envelope;
  };
  for (const r of changed) {
    const n = size.resource(r);
    if (res.length > 0 && bytes + n > limit) flush();
    res.push(r);
    bytes += n;
  }
  for (const name of removed) {
    const n = size.removed(name);
    if ((res.length > 0 || rem.length > 0) && bytes + n > limit) flush();
    rem.push(name);
    bytes += n;
  }
  if (res.length > 0 || rem.length > 0 || chunks.length === 0) flush();
  return chunks;
}
