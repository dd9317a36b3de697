import { isWildcardType } from './type-urls.js';
import type { WatchedResourceView } from './generator.js';
import type { HeldResources } from './held-resources.js';
import { unsharedNameSet } from './name-sets.js';

/** A NACK as the proxy reported it. */
export interface NackInfo {
  readonly nonce: string;
  readonly message: string;
  readonly code: number;
  readonly at: number;
}

/** Per-stream, per-type state (istiod's WatchedResource). Immutable: transitions return a new record. */
export interface WatchedResource extends WatchedResourceView {
  readonly nonceSent?: string;
  readonly versionSent?: string;
  readonly nonceAcked?: string;
  readonly versionAcked?: string;
  readonly lastSentAt?: number;
  readonly lastError?: NackInfo;
  /**
   * istiod's AlwaysRespond: set for a stream whose first request carried a version or nonce from
   * elsewhere (a reconnect); the next response is sent even if it looks like an ACK, then cleared.
   */
  readonly alwaysRespond?: boolean;
  /**
   * SotW: the resources of the last responses (what the proxy holds once it ACKs), shared with the
   * cache (no per-stream copy): an identical regeneration is not re-sent, and an EDS-only push
   * sends only what differs.
   */
  readonly sentResources?: HeldResources;
  /** Delta: name → version of every resource this stream believes the proxy holds. */
  readonly sentVersions?: ReadonlyMap<string, string>;
}

/** The fields of a SotW DiscoveryRequest the ACK logic looks at. */
export interface SotwRequestView {
  readonly typeUrl: string;
  readonly resourceNames: readonly string[];
  readonly responseNonce: string;
  readonly versionInfo: string;
  readonly errorDetail?: { readonly code: number; readonly message: string };
}

export type RequestKind = 'initial' | 'reconnect' | 'ack' | 'nack' | 'stale' | 'resubscribe' | 'unsubscribe';

export interface RequestDecision {
  readonly kind: RequestKind;
  readonly respond: boolean;
  /** The new state; undefined when the type is no longer watched. */
  readonly next: WatchedResource | undefined;
}

/** Whether two name sets hold the same names (any order). */
function sameNames(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  if (a.size !== b.size) return false;
  for (const n of b) if (!a.has(n)) return false;
  return true;
}

/**
 * istiod's shouldRespond for state-of-the-world streams:
 * - a NACK (error_detail set) is recorded and never answered: re-sending the same config would loop;
 * - the first request for a type is answered, including one that carries a version and nonce from
 *   another replica or an earlier stream (a reconnect looks like an ACK but must get a response);
 * - a request with a nonce other than the last one sent is stale and ignored;
 * - such a reconnect sets `alwaysRespond`, cleared once a response is sent (else every ACK loops);
 * - an ACK is answered only when the subscribed names changed (clients send the new list with the
 *   previous nonce); an empty list on a non-wildcard watch means "unsubscribe from everything".
 */
/**
 * `nameSet` makes the stored set of a request's names (a NameSetPool shares identical lists between
 * streams).
 */
export function decideSotw(
  w: WatchedResource | undefined,
  req: SotwRequestView,
  now: number,
  nameSet: (names: readonly string[]) => ReadonlySet<string> = unsharedNameSet,
): RequestDecision {
  const names = req.resourceNames;
  if (req.errorDetail) {
    const lastError: NackInfo = { nonce: req.responseNonce, message: req.errorDetail.message, code: req.errorDetail.code, at: now };
    const base = w ?? { typeUrl: req.typeUrl, names: nameSet(names), wildcard: names.length === 0 && isWildcardType(req.typeUrl) };
    return { kind: 'nack', respond: false, next: { ...base, lastError } };
  }
  if (!w || req.responseNonce === '') {
    const wildcard = names.length === 0 && isWildcardType(req.typeUrl);
    const kind: RequestKind = req.responseNonce !== '' || req.versionInfo !== '' ? 'reconnect' : 'initial';
    const next: WatchedResource = {
      ...(w ?? {}),
      typeUrl: req.typeUrl,
      names: nameSet(names),
      wildcard,
      ...(kind === 'reconnect' ? { alwaysRespond: true } : {}),
    };
    return { kind, respond: true, next };
  }
  if (req.responseNonce !== w.nonceSent) return { kind: 'stale', respond: false, next: w };

  const acked: WatchedResource = { ...w, nonceAcked: req.responseNonce, versionAcked: req.versionInfo };
  if (names.length === 0 && !w.wildcard) {
    return { kind: 'unsubscribe', respond: false, next: w.names.size === 0 ? acked : { ...acked, names: new Set() } };
  }
  // The stored set of a repeated (shared) list is found by identity: the common ACK costs no walk.
  const set = names.length > 0 ? nameSet(names) : w.names;
  if (set !== w.names && !sameNames(w.names, set)) {
    return { kind: 'resubscribe', respond: true, next: { ...acked, names: set, wildcard: false } };
  }
  // A reconnect whose first response has not gone out yet (e.g. the generator failed): answer once.
  if (w.alwaysRespond === true) return { kind: 'ack', respond: true, next: acked };
  return { kind: 'ack', respond: false, next: acked };
}
