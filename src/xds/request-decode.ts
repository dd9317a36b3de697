/**
 * SotW DiscoveryRequest decoding that shares repeated subscription lists. An Envoy sidecar ACKs
 * every EDS push with all of its cluster names (a few hundred, ~10 KiB): decoding them again per
 * ACK was most of the CPU an endpoint change cost at 2000 sidecars. The names' bytes of an ACK
 * are those of the last request, so a list seen before is looked up by its bytes, not decoded.
 *
 * Only the common shape takes this path: version_info, resource_names, type_url and
 * response_nonce. A request with anything else (the first one's node, a NACK's error_detail,
 * resource locators, unknown fields) is decoded by protobuf-es as it is.
 */
import { create, fromBinary } from '@bufbuild/protobuf';
import { BinaryReader, WireType } from '@bufbuild/protobuf/wire';
import { DiscoveryRequestSchema, type DiscoveryRequest } from '../gen/envoy/service/discovery/v3/discovery_pb.js';

const VERSION_INFO = 1;
const RESOURCE_NAMES = 3;
const TYPE_URL = 4;
const RESPONSE_NONCE = 5;

/** Lists of fewer bytes decode faster than they hash. */
const MIN_SHARED_BYTES = 256;

export interface NameListMemoOptions {
  /** Bytes of encoded lists kept (their decoded names cost about as much again); oldest go first. */
  readonly maxBytes: number;
}

/** Decoded name lists by their encoded bytes, least recently used first out. */
export class NameListMemo {
  readonly #lists = new Map<string, readonly string[]>();
  readonly #maxBytes: number;
  #bytes = 0;
  hits = 0;
  misses = 0;

  constructor(opts: NameListMemoOptions) {
    this.#maxBytes = opts.maxBytes;
  }

  /** The names encoded in `region` (consecutive resource_names fields), decoded once per distinct list. */
  names(region: Uint8Array, decode: () => string[]): readonly string[] {
    if (region.byteLength < MIN_SHARED_BYTES || region.byteLength > this.#maxBytes) return decode();
    const key = Buffer.from(region.buffer, region.byteOffset, region.byteLength).toString('latin1');
    const known = this.#lists.get(key);
    if (known) {
      this.hits++;
      this.#lists.delete(key);
      this.#lists.set(key, known);
      return known;
    }
    this.misses++;
    const list = Object.freeze(decode());
    this.#lists.set(key, list);
    this.#bytes += key.length;
    for (const [k] of this.#lists) {
      if (this.#bytes <= this.#maxBytes) break;
      this.#lists.delete(k);
      this.#bytes -= k.length;
    }
    return list;
  }
}

/**
 * Decodes one DiscoveryRequest; the resource_names of the common ACK shape come from `memo`.
 * The result equals protobuf-es's fromBinary for every input (the list may be frozen and shared).
 */
export function decodeDiscoveryRequest(bytes: Uint8Array, memo: NameListMemo): DiscoveryRequest {
  const r = new BinaryReader(bytes);
  let versionInfo = '';
  let typeUrl = '';
  let responseNonce = '';
  let namesStart = -1;
  let namesEnd = -1;
  const names: string[] = [];
  while (r.pos < r.len) {
    const start = r.pos;
    const [field, wireType] = r.tag();
    if (wireType !== WireType.LengthDelimited) return fromBinary(DiscoveryRequestSchema, bytes);
    switch (field) {
      case VERSION_INFO:
        versionInfo = r.string();
        break;
      case TYPE_URL:
        typeUrl = r.string();
        break;
      case RESPONSE_NONCE:
        responseNonce = r.string();
        break;
      case RESOURCE_NAMES:
        // One run of consecutive names (as every encoder writes them) is shared; anything else decodes.
        if (namesEnd !== -1 && namesEnd !== start) return fromBinary(DiscoveryRequestSchema, bytes);
        if (namesStart === -1) namesStart = start;
        r.skip(WireType.LengthDelimited);
        namesEnd = r.pos;
        break;
      default:
        return fromBinary(DiscoveryRequestSchema, bytes);
    }
  }
  const resourceNames = namesStart === -1 ? names : memo.names(bytes.subarray(namesStart, namesEnd), () => {
    const nr = new BinaryReader(bytes.subarray(namesStart, namesEnd));
    while (nr.pos < nr.len) {
      nr.tag();
      names.push(nr.string());
    }
    return names;
  });
  return create(DiscoveryRequestSchema, { versionInfo, typeUrl, responseNonce, resourceNames: resourceNames as string[] });
}
