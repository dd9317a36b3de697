/**
 * How the agent gets its DNS name table (istio-agent's xds_proxy.go): on each ADS stream the
 * proxy relays for Envoy, once Envoy has asked for listeners, the agent asks the control plane for
 * `istio.networking.nds.v1.NameTable` on that same stream. NameTable responses never reach Envoy:
 * the agent takes the table, ACKs it upstream (NACKs one it cannot decode) and keeps relaying the
 * rest byte for byte. Only the type URL of each message is read; other responses stay undecoded.
 */
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { BinaryReader, WireType } from '@bufbuild/protobuf/wire';
import { NameTableSchema, type NameTable } from '../../gen/dns/proto/nds_pb.js';
import {
  DeltaDiscoveryRequestSchema,
  DeltaDiscoveryResponseSchema,
  DiscoveryRequestSchema,
  DiscoveryResponseSchema,
} from '../../gen/envoy/service/discovery/v3/discovery_pb.js';
import { TypeUrl } from '../../xds/type-urls.js';
import { errorMessage } from '../../util/errors.js';
import type { Logger } from '../../util/log.js';

/** The gRPC INTERNAL code istio-agent NACKs with. */
const INTERNAL = 13;

/** One relayed stream's side of the agent's own types. */
export interface XdsStreamTap {
  /** Requests the agent sends upstream after this one of the client. */
  afterRequest(request: Buffer): Buffer[];
  /** For a response the agent consumes itself: its ACK or NACK, to send upstream instead of forwarding it. */
  consume(response: Buffer): Buffer | undefined;
}

export interface XdsSideChannel {
  openStream(delta: boolean): XdsStreamTap;
}

/** The string at top-level field `field` of an encoded message ('' when absent or unreadable). */
export function peekString(bytes: Uint8Array, field: number): string {
  try {
    const r = new BinaryReader(bytes);
    while (r.pos < r.len) {
      const [no, wt] = r.tag();
      if (no === field && wt === WireType.LengthDelimited) return r.string();
      r.skip(wt, no);
    }
  } catch {
    // Not a message this peek can read: the control plane or the client will say why.
  }
  return '';
}

/** The type URL of a DiscoveryRequest (field 4) or DeltaDiscoveryRequest (field 2). */
const requestType = (b: Uint8Array, delta: boolean): string => peekString(b, delta ? 2 : 4);
/** DiscoveryResponse and DeltaDiscoveryResponse both carry it in field 4. */
const responseType = (b: Uint8Array): string => peekString(b, 4);

export function nameTableChannel(onTable: (table: NameTable) => void, log: Logger): XdsSideChannel {
  return {
    openStream(delta) {
      let asked = false;
      return {
        afterRequest(request) {
          if (asked || requestType(request, delta) !== TypeUrl.Listener) return [];
          asked = true;
          // An empty first request subscribes to the wildcard: the one table of this proxy.
          return [
            Buffer.from(
              delta
                ? toBinary(DeltaDiscoveryRequestSchema, create(DeltaDiscoveryRequestSchema, { typeUrl: TypeUrl.NameTable }))
                : toBinary(DiscoveryRequestSchema, create(DiscoveryRequestSchema, { typeUrl: TypeUrl.NameTable })),
            ),
          ];
        },
        consume(response) {
          if (responseType(response) !== TypeUrl.NameTable) return undefined;
          let nonce = '';
          let version = '';
          let error: string | undefined;
          try {
            let any: { value: Uint8Array } | undefined;
            if (delta) {
              const r = fromBinary(DeltaDiscoveryResponseSchema, response);
              nonce = r.nonce;
              any = r.resources[0]?.resource;
            } else {
              const r = fromBinary(DiscoveryResponseSchema, response);
              nonce = r.nonce;
              version = r.versionInfo;
              any = r.resources[0];
            }
            // No resource: nothing to apply (istio-agent keeps its table and still answers).
            if (any) onTable(fromBinary(NameTableSchema, any.value));
          } catch (err) {
            error = `cannot decode the NameTable: ${errorMessage(err)}`;
            log.warn('NDS response rejected', { error });
          }
          const errorDetail = error !== undefined ? { code: INTERNAL, message: error } : undefined;
          return Buffer.from(
            delta
              ? toBinary(
                  DeltaDiscoveryRequestSchema,
                  create(DeltaDiscoveryRequestSchema, {
                    typeUrl: TypeUrl.NameTable,
                    responseNonce: nonce,
                    ...(errorDetail ? { errorDetail } : {}),
                  }),
                )
              : toBinary(
                  DiscoveryRequestSchema,
                  create(DiscoveryRequestSchema, {
                    typeUrl: TypeUrl.NameTable,
                    versionInfo: version,
                    responseNonce: nonce,
                    ...(errorDetail ? { errorDetail } : {}),
                  }),
                ),
          );
        },
      };
    },
  };
}
