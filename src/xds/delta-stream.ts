import type { DeltaDiscoveryRequest } from '../gen/envoy/service/discovery/v3/discovery_pb.js';
import { type PushContext, pushRequest, type PushRequest } from '../model/index.js';
import type { Connection } from './connection.js';
import { decideDelta, planDelta, splitDelta, type DeltaChunk, type DeltaPlan } from './delta-decision.js';
import { deltaEnvelopeSize, deltaListSize, deltaResourceSize, deltaResponseMessage, removedNameSize } from './resource.js';
import { NOTHING_SENT, requestBasics, type StreamHost, type StreamProtocol } from './stream-host.js';
import { edsOnlyNames } from './push-scope.js';
import { shortType, TypeUrl } from './type-urls.js';
import type { WatchedResource } from './watched-resource.js';
import type { WireMessage } from './wire-message.js';
import type { BudgetRelease } from './write-budget.js';

/** One response of a plan, encoded with its nonce. */
interface EncodedChunk {
  readonly nonce: string;
  readonly c: DeltaChunk;
  readonly bytes: WireMessage;
}

/** Nonces are `<8 hex>-<base36>`; sized generously for the split estimate. */
const NONCE_RESERVE = 32;

/**
 * Delta ADS (DeltaAggregatedResources) on top of the shared stream plumbing: ACK/NACK and
 * subscription bookkeeping through the pure decideDelta, per-resource diffs through planDelta,
 * and responses over the size limit split through splitDelta.
 */
export class DeltaXds implements StreamProtocol<DeltaDiscoveryRequest> {
  constructor(private readonly host: StreamHost) {}

  async onRequest(conn: Connection, req: DeltaDiscoveryRequest): Promise<void> {
    const h = this.host;
    const basics = requestBasics(h, conn, req);
    if (!basics) return;
    const { typeUrl, errorDetail } = basics;
    const d = decideDelta(
      conn.watched(typeUrl),
      {
        typeUrl,
        subscribe: req.resourceNamesSubscribe,
        unsubscribe: req.resourceNamesUnsubscribe,
        initialVersions: req.initialResourceVersions,
        responseNonce: req.responseNonce,
        ...(errorDetail ? { errorDetail } : {}),
      },
      h.clock.now(),
      h.nameSets,
    );
    conn.setWatched(typeUrl, d.next);
    if (d.kind === 'nack') {
      h.recordNack(conn, typeUrl, req.responseNonce, errorDetail?.message ?? '', { delta: true });
      return;
    }
    if (req.responseNonce !== '') h.notify('ackReceived', conn, typeUrl, req.responseNonce);
    if (!d.respond) return;
    // A subscription to more names (Envoy's EDS once CDS added a cluster) is answered with those
    // names alone: what the stream already holds is kept current by pushes, not regenerated here.
    const only = d.kind === 'subscribe' && !d.next.wildcard ? h.nameSets.of([...d.requested]) : undefined;
    await this.sendType(conn, typeUrl, h.push(), pushRequest({ full: true, reason: 'proxyrequest', start: h.clock.now() }), true, {
      requested: d.requested,
      ...(only ? { only } : {}),
    });
  }

  /**
   * Sends what changed for one type: resources whose version differs from what the stream holds,
   * and removals for held names that no longer exist. A push with nothing to say is skipped; an
   * answer to a request (`answer`) or a reconnect (`alwaysRespond`) is sent even when empty.
   * `requested`: names the request newly subscribed; `resend`: names due even when the stream holds
   * them unchanged; `only`: regenerate just these names (the rest stay held). Returns, for CDS, the
   * clusters sent (what EDS must follow with); nothing for other types.
   */
  async sendType(
    conn: Connection,
    typeUrl: string,
    push: PushContext,
    req: PushRequest,
    answer: boolean,
    opts: { readonly requested?: ReadonlySet<string>; readonly resend?: ReadonlySet<string>; readonly only?: ReadonlySet<string> } = {},
  ): Promise<ReadonlySet<string>> {
    const h = this.host;
    const started = performance.now();
    for (;;) {
      const w = conn.watched(typeUrl);
      if (!w) return NOTHING_SENT;
      // An EDS-only push regenerates just the changed hosts' ClusterLoadAssignments; the rest stay held.
      const only = opts.only ?? (!answer ? edsOnlyNames(w, req) : undefined);
      const resources = h.generate(conn, typeUrl, only ? { ...w, names: only } : w, push, req);
      if (!resources) return NOTHING_SENT;
      const plan = planDelta(w, resources, opts.requested, !answer && req.forced, only, opts.resend);
      const mustAnswer = answer || w.alwaysRespond === true;
      if (!mustAnswer && plan.changed.length === 0 && plan.removed.length === 0) {
        h.stats.recordPushSkipped(shortType(typeUrl));
        return NOTHING_SENT;
      }
      const chunks = this.#split(conn, typeUrl, push, plan);
      // Built first (laid out only as the transport writes them); the budget counts all their bytes.
      const encoded = chunks.map((c) => {
        const nonce = h.nextNonce();
        return {
          nonce,
          c,
          bytes: deltaResponseMessage({ systemVersionInfo: push.version, typeUrl, nonce, resources: c.resources, removed: c.removed }),
        };
      });
      const release = await conn.reserve(encoded.reduce((n, e) => n + e.bytes.byteLength, 0));
      // The budget may have made us wait: if the stream's state moved meanwhile, plan again.
      if (conn.watched(typeUrl) !== w) {
        release();
        continue;
      }
      await this.#send(conn, typeUrl, push, req, w, plan, encoded, release, answer);
      h.stats.recordPushTime(shortType(typeUrl), performance.now() - started);
      return typeUrl === TypeUrl.Cluster ? new Set(plan.changed.map((r) => r.name)) : NOTHING_SENT;
    }
  }

  /** The plan in responses under the size limit (a warning when it takes more than one, or one is still too big). */
  #split(conn: Connection, typeUrl: string, push: PushContext, plan: DeltaPlan): DeltaChunk[] {
    const h = this.host;
    const limit = h.maxResponseBytes;
    const chunks = splitDelta(
      plan.changed,
      plan.removed,
      {
        envelope: deltaEnvelopeSize(push.version, typeUrl, NONCE_RESERVE),
        resource: deltaResourceSize,
        removed: removedNameSize,
        list: deltaListSize,
      },
      limit,
    );
    if (chunks.length > 1 || chunks.some((c) => c.bytes > limit)) {
      h.log.warn('xDS response exceeds the size limit', {
        proxy: conn.proxy.id,
        type: shortType(typeUrl),
        bytes: chunks.reduce((n, c) => n + c.bytes, 0),
        resources: plan.changed.length,
        limit,
        delta: true,
        parts: chunks.length,
        oversizedParts: chunks.filter((c) => c.bytes > limit).length,
      });
      h.stats.recordOversizedResponse(
        shortType(typeUrl),
        chunks.reduce((n, c) => n + c.bytes, 0),
      );
    }
    return chunks;
  }

  async #send(
    conn: Connection,
    typeUrl: string,
    push: PushContext,
    req: PushRequest,
    w: WatchedResource,
    plan: DeltaPlan,
    encoded: readonly EncodedChunk[],
    release: BudgetRelease,
    answer: boolean,
  ): Promise<void> {
    const h = this.host;
    const last = encoded[encoded.length - 1];
    // State first, synchronously: a request handled while these are written sees the new holdings.
    conn.setWatched(typeUrl, {
      ...w,
      ...(last ? { nonceSent: last.nonce } : {}),
      versionSent: push.version,
      lastSentAt: h.clock.now(),
      sentVersions: plan.sentVersions,
      alwaysRespond: false,
    });
    for (const [i, e] of encoded.entries()) {
      h.stats.recordPush(shortType(typeUrl), e.bytes.byteLength);
      h.notify('responseSent', conn, {
        typeUrl,
        nonce: e.nonce,
        version: push.version,
        bytes: e.bytes.byteLength,
        resources: e.c.resources.length,
        req,
        delta: true,
      });
      // The budget is given back with the last part. A push does not wait for the transport (see
      // DiscoveryServer.pushConnection); an answer does.
      const taken = conn.send(e.bytes, i === encoded.length - 1 ? release : undefined);
      if (answer) await taken;
    }
    if (encoded.length === 0) release();
  }
}
