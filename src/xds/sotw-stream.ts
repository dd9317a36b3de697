import type { DiscoveryRequest } from '../gen/envoy/service/discovery/v3/discovery_pb.js';
import { type PushContext, pushRequest, type PushRequest } from '../model/index.js';
import type { Connection } from './connection.js';
import { HeldResources, indexOf } from './held-resources.js';
import { edsOnlyNames } from './push-scope.js';
import { discoveryResponseMessage, type XdsResource } from './resource.js';
import { NOTHING_SENT, requestBasics, type StreamHost, type StreamProtocol } from './stream-host.js';
import { shortType, TypeUrl } from './type-urls.js';
import { decideSotw, type WatchedResource } from './watched-resource.js';
import { GRPC_STATUS_CODES } from '../util/grpc-status.js';

/** before → after → the names added, or null when some were also dropped; weak on both (pooled) sets. */
const growth = new WeakMap<ReadonlySet<string>, WeakMap<ReadonlySet<string>, readonly string[] | null>>();

/**
 * The names `after` adds to `before` when it keeps all of them (a subscription that only grew),
 * else undefined. Streams in step resubscribe from and to the same pooled sets: worked out once
 * (Envoy's EDS lists every cluster, and all of a view's sidecars grow it alike).
 */
function addedOnly(before: ReadonlySet<string>, after: ReadonlySet<string>): readonly string[] | undefined {
  let byAfter = growth.get(before);
  if (!byAfter) growth.set(before, (byAfter = new WeakMap()));
  let added = byAfter.get(after);
  if (added === undefined) {
    let kept = 0;
    for (const n of before) if (after.has(n)) kept++;
    // Frozen: the name-set pool then finds the set of this list by identity.
    added = kept === before.size ? Object.freeze([...after].filter((n) => !before.has(n))) : null;
    byAfter.set(after, added);
  }
  return added ?? undefined;
}

/** What one SotW response of a type carries, and what the proxy holds once it is applied. */
interface SotwPlan {
  readonly w: WatchedResource;
  readonly toSend: readonly XdsResource[];
  readonly sentResources: HeldResources;
}

/**
 * SotW ADS (StreamAggregatedResources), the peer of DeltaXds over the same StreamHost: ACK/NACK
 * and subscription bookkeeping through the pure decideSotw, the skip of unchanged resends through
 * what each stream holds (HeldResources, shared lists by identity).
 */
export class SotwXds implements StreamProtocol<DiscoveryRequest> {
  constructor(private readonly host: StreamHost) {}

  async onRequest(conn: Connection, req: DiscoveryRequest): Promise<void> {
    const h = this.host;
    const basics = requestBasics(h, conn, req);
    if (!basics) return;
    const { typeUrl, errorDetail } = basics;
    if (h.deltaOnly(conn, typeUrl)) {
      // istiod serves these on Delta only too; an empty SotW answer would look like an empty mesh.
      conn.reject(
        GRPC_STATUS_CODES.INVALID_ARGUMENT,
        `${typeUrl} is served on Delta ADS only (DeltaAggregatedResources), not state of the world`,
      );
      return;
    }
    const w = conn.watched(typeUrl);
    const decision = decideSotw(
      w,
      {
        typeUrl,
        resourceNames: req.resourceNames,
        responseNonce: req.responseNonce,
        versionInfo: req.versionInfo,
        ...(errorDetail ? { errorDetail } : {}),
      },
      h.clock.now(),
      (names) => h.nameSets.of(names),
    );
    conn.setWatched(typeUrl, decision.next);
    if (decision.kind === 'nack') {
      h.recordNack(conn, typeUrl, req.responseNonce, errorDetail?.message ?? '', { version: req.versionInfo });
      return;
    }
    if (decision.kind === 'stale') {
      h.log.debug('stale nonce ignored', { proxy: conn.proxy.id, type: shortType(typeUrl), nonce: req.responseNonce });
      return;
    }
    if (decision.kind === 'ack' || decision.kind === 'resubscribe' || decision.kind === 'unsubscribe') {
      h.notify('ackReceived', conn, typeUrl, req.responseNonce);
    }
    if (!decision.respond) return;
    // EDS is not a state-of-the-world type: a subscription that grew (Envoy's EDS once CDS added a
    // cluster) is answered with the new names alone, as istiod does; the rest stay as held.
    const before = w?.names;
    const after = decision.next?.names;
    const added =
      decision.kind === 'resubscribe' && typeUrl === TypeUrl.ClusterLoadAssignment && before && after
        ? addedOnly(before, after)
        : undefined;
    const req2 = pushRequest({ full: true, reason: 'proxyrequest', start: h.clock.now() });
    await this.sendType(conn, typeUrl, h.push(), req2, true, added ? { only: h.nameSets.of(added) } : {});
  }

  /**
   * Generates and sends one SotW type to one proxy, within the shared write budget. Returns, for
   * CDS, the clusters sent whose version the proxy did not hold (what EDS must follow with).
   */
  async sendType(
    conn: Connection,
    typeUrl: string,
    push: PushContext,
    req: PushRequest,
    answer: boolean,
    opts: { readonly resend?: ReadonlySet<string>; readonly only?: ReadonlySet<string> } = {},
  ): Promise<ReadonlySet<string>> {
    const h = this.host;
    const started = performance.now();
    const nonce = h.nextNonce();
    for (;;) {
      const plan = this.#plan(conn, typeUrl, push, req, answer, opts.resend, opts.only);
      if (!plan) return NOTHING_SENT;
      const { w, toSend } = plan;
      // Built first (its pieces are laid out only as the transport writes them). The budget counts
      // all its bytes, shared blocks too: it paces what waits on the transport, which readers
      // must take, not only what this process holds.
      const bytes = discoveryResponseMessage({ versionInfo: push.version, typeUrl, nonce, resources: toSend });
      const release = await conn.reserve(bytes.byteLength);
      // The budget may have made us wait: if the stream's state moved meanwhile, plan again.
      if (conn.watched(typeUrl) !== w) {
        release();
        continue;
      }
      if (bytes.byteLength > h.maxResponseBytes) {
        // State of the world cannot be split: send it (the client may reject it) but say so.
        h.log.warn('xDS response exceeds the size limit', {
          proxy: conn.proxy.id,
          type: shortType(typeUrl),
          bytes: bytes.byteLength,
          resources: toSend.length,
          limit: h.maxResponseBytes,
          delta: false,
        });
        h.stats.recordOversizedResponse(shortType(typeUrl), bytes.byteLength);
      }
      conn.setWatched(typeUrl, {
        ...w,
        nonceSent: nonce,
        versionSent: push.version,
        lastSentAt: h.clock.now(),
        sentResources: plan.sentResources,
        alwaysRespond: false,
      });
      h.stats.recordPush(shortType(typeUrl), bytes.byteLength);
      h.notify('responseSent', conn, {
        typeUrl,
        nonce,
        version: push.version,
        bytes: bytes.byteLength,
        resources: toSend.length,
        req,
        delta: false,
      });
      // An answer waits for the transport (a client that sends requests but never reads gets no
      // more); a push does not: the DiscoveryServer hands that wait to the push worker.
      const taken = conn.send(bytes, release);
      if (answer) await taken;
      h.stats.recordPushTime(shortType(typeUrl), performance.now() - started);
      // What the proxy will update: Envoy skips clusters it holds unchanged (they need no EDS again).
      if (typeUrl !== TypeUrl.Cluster) return NOTHING_SENT;
      return w.sentResources ? w.sentResources.changedIn(toSend) : new Set(toSend.map((r) => r.name));
    }
  }

  /**
   * What one SotW response of a type to one proxy carries, or undefined when none is due: a push
   * (`answer` false) whose resources are those the proxy holds is skipped — an unchanged resend
   * costs every proxy a decode and an ACK. A reconnect's first response clears alwaysRespond.
   */
  #plan(
    conn: Connection,
    typeUrl: string,
    push: PushContext,
    req: PushRequest,
    answer: boolean,
    resend?: ReadonlySet<string>,
    asked?: ReadonlySet<string>,
  ): SotwPlan | undefined {
    const h = this.host;
    const w = conn.watched(typeUrl);
    if (!w) return undefined;
    // EDS is not a state-of-the-world type: an EDS-only push regenerates and sends just the changed
    // hosts, and an answer to a grown subscription just the names it `asked` for (all of them).
    const only = asked ?? (!answer ? edsOnlyNames(w, req) : undefined);
    const resources = h.generate(conn, typeUrl, only ? { ...w, names: only } : w, push, req);
    if (!resources) return undefined;
    const held = w.sentResources;
    if (only) {
      const toSend = asked
        ? resources
        : resources.filter((r) => req.forced || resend?.has(r.name) === true || held?.version(r.name) !== r.version);
      if (toSend.length === 0 && !answer && w.alwaysRespond !== true && w.nonceSent !== undefined) {
        h.stats.recordPushSkipped(shortType(typeUrl));
        return undefined;
      }
      return { w, toSend, sentResources: (held ?? HeldResources.of([])).with(resources) };
    }
    // Cached lists are shared by every proxy of a view: identity is the common case. Order is not
    // compared: after an EDS-only push the changed hosts are held apart from the list.
    const mustResend = resend !== undefined && resend.size > 0 && [...resend].some((name) => indexOf(resources).has(name));
    if (
      !answer &&
      !req.forced &&
      !mustResend &&
      w.alwaysRespond !== true &&
      w.nonceSent !== undefined &&
      held?.sameAs(resources) === true
    ) {
      h.stats.recordPushSkipped(shortType(typeUrl));
      return undefined;
    }
    return { w, toSend: resources, sentResources: HeldResources.of(resources) };
  }
}
