/**
 * SotW DiscoveryRequest decoding that shares repeated subscription lists. An Envoy sidecar ACKs
 * every EDS push with all of its cluster names (a few hundred, ~10 KiB): decoding them again per
 * ACK was most of the CPU an endpoint change cost at 2000 sidecars. The names' bytes of an ACK
 * are those of the last request, so a list seen before is looked up by its bytes, not decoded.
 *
 * Only the common shape takes this path: version_info, node (from a memo by its bytes: clients that
 * repeat it send the same bytes), resource_names, type_url and response_nonce. A request with
 * anything else (a NACK's error_detail, resource locators, unknown fields) is decoded by
 * protobuf-es as it is.
 */
import { fromBinary } from '@bufbuild/protobuf';
import { BinaryReader, WireType } from '@bufbuild/protobuf/wire';
import { BytesLru } from '../util/bytes-lru.js';
import { NodeSchema, type Node } from '../gen/envoy/config/core/v3/base_pb.js';
import {
  DeltaDiscoveryRequestSchema,
  DiscoveryRequestSchema,
  type DeltaDiscoveryRequest,
  type DiscoveryRequest,
} from '../gen/envoy/service/discovery/v3/discovery_pb.js';

const VERSION_INFO = 1;
const NODE = 2;
const RESOURCE_NAMES = 3;
const TYPE_URL = 4;
const RESPONSE_NONCE = 5;

/** Lists of fewer bytes decode faster than they hash. */
const MIN_SHARED_BYTES = 256;

export interface NameListMemoOptions {
  /** Bytes of encoded lists kept (their decoded names cost about as much again); oldest go first. */
  readonly maxBytes: number;
  /**
   * Smaller values are decoded each time (default 256: a short name list decodes faster than it
   * hashes). A node is worth keeping at any size: decoding one allocates a tree of messages.
   */
  readonly minBytes?: number;
}

/** Decoded values by their encoded bytes (name lists, a stream's repeated node), least recently used first out. */
export class DecodedByBytes<T> {
  readonly #values: BytesLru<string, T>;
  readonly #minBytes: number;
  hits = 0;
  misses = 0;

  constructor(opts: NameListMemoOptions) {
    this.#values = new BytesLru(opts.maxBytes);
    this.#minBytes = opts.minBytes ?? MIN_SHARED_BYTES;
  }

  /** The value encoded in `region`, decoded once per distinct bytes (it is shared: never mutate it). */
  of(region: Uint8Array, decode: () => T): T {
    if (region.byteLength < this.#minBytes || region.byteLength > this.#values.maxBytes) return decode();
    const key = Buffer.from(region.buffer, region.byteOffset, region.byteLength).toString('latin1');
    const known = this.#values.get(key);
    if (known !== undefined) {
      this.hits++;
      return known;
    }
    this.misses++;
    const value = decode();
    this.#values.set(key, value, key.length);
    return value;
  }
}

/**
 * Decodes one DiscoveryRequest; the resource_names of the common ACK shape come from `memo`.
 * The result equals protobuf-es's fromBinary for every input (the list may be frozen and shared).
 */
export function decodeDiscoveryRequest(bytes: Uint8Array, memo: NameListMemo, nodes?: DecodedByBytes<Node>): DiscoveryRequest {
  const r = new BinaryReader(bytes);
  let node: Node | undefined;
  let versionInfo = '';
  let typeUrl = '';
  let responseNonce = '';
  let names: Run | undefined;
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
      case NODE: {
        if (node || !nodes) return fromBinary(DiscoveryRequestSchema, bytes);
        const region = r.bytes();
        node = nodes.of(region, () => fromBinary(NodeSchema, region));
        break;
      }
      case RESOURCE_NAMES:
        names = extendRun(names, start, r);
        if (!names) return fromBinary(DiscoveryRequestSchema, bytes);
        break;
      default:
        return fromBinary(DiscoveryRequestSchema, bytes);
    }
  }
  const resourceNames = names ? sharedNames(memo, bytes.subarray(names[0], names[1])) : [];
  const req: DiscoveryRequest = {
    $typeName: DiscoveryRequestSchema.typeName,
    versionInfo,
    resourceNames: resourceNames as string[],
    resourceLocators: [],
    typeUrl,
    responseNonce,
  };
  if (node) req.node = node;
  return req;
}

/** Where a run of consecutive entries of one repeated field starts and ends in the request. */
type Run = readonly [start: number, end: number];

/**
 * The run extended by the entry whose tag was just read at `start` (its value skipped), or
 * undefined when the entry does not follow the run: one run of consecutive entries (as every
 * encoder writes a list) is shared, anything else is decoded by protobuf-es.
 */
function extendRun(run: Run | undefined, start: number, r: BinaryReader): Run | undefined {
  if (run && run[1] !== start) return undefined;
  r.skip(WireType.LengthDelimited);
  return [run ? run[0] : start, r.pos];
}

/** Decoded name lists by their bytes. */
export class NameListMemo extends DecodedByBytes<readonly string[]> {}

/** The names of a run of consecutive string fields, from `memo` (frozen: shared between requests). */
function sharedNames(memo: NameListMemo, region: Uint8Array): readonly string[] {
  return memo.of(region, () => {
    const names: string[] = [];
    const nr = new BinaryReader(region);
    while (nr.pos < nr.len) {
      nr.tag();
      names.push(nr.string());
    }
    return Object.freeze(names);
  });
}

const DELTA_NODE = 1;
const DELTA_TYPE_URL = 2;
const SUBSCRIBE = 3;
const UNSUBSCRIBE = 4;
const DELTA_NONCE = 6;

/**
 * Decodes one DeltaDiscoveryRequest the same way: its subscribe and unsubscribe lists (Envoy's
 * EDS subscription names every cluster, alike across the sidecars of a view) and its node (a
 * client that repeats it sends the same bytes each time) come from memos. Any other field (initial
 * versions, a NACK's error_detail, locators, unknown fields) is decoded by protobuf-es as it is.
 * The result equals fromBinary's for every input (lists and node may be shared; never mutated).
 */
export function decodeDeltaDiscoveryRequest(bytes: Uint8Array, names: NameListMemo, nodes: DecodedByBytes<Node>): DeltaDiscoveryRequest {
  const r = new BinaryReader(bytes);
  let typeUrl = '';
  let responseNonce = '';
  let node: Node | undefined;
  const runs: Record<number, Run | undefined> = {};
  while (r.pos < r.len) {
    const start = r.pos;
    const [field, wireType] = r.tag();
    if (wireType !== WireType.LengthDelimited) return fromBinary(DeltaDiscoveryRequestSchema, bytes);
    switch (field) {
      case DELTA_TYPE_URL:
        typeUrl = r.string();
        break;
      case DELTA_NONCE:
        responseNonce = r.string();
        break;
      case DELTA_NODE: {
        if (node) return fromBinary(DeltaDiscoveryRequestSchema, bytes);
        const region = r.bytes();
        node = nodes.of(region, () => fromBinary(NodeSchema, region));
        break;
      }
      case SUBSCRIBE:
      case UNSUBSCRIBE:
        runs[field] = extendRun(runs[field], start, r);
        if (!runs[field]) return fromBinary(DeltaDiscoveryRequestSchema, bytes);
        break;
      default:
        return fromBinary(DeltaDiscoveryRequestSchema, bytes);
    }
  }
  const list = (field: number): string[] => {
    const run = runs[field];
    return (run ? sharedNames(names, bytes.subarray(run[0], run[1])) : []) as string[];
  };
  // A literal of every field, as create() makes it (create walks the schema: a few µs per request).
  const req: DeltaDiscoveryRequest = {
    $typeName: DeltaDiscoveryRequestSchema.typeName,
    typeUrl,
    resourceNamesSubscribe: list(SUBSCRIBE),
    resourceNamesUnsubscribe: list(UNSUBSCRIBE),
    resourceLocatorsSubscribe: [],
    resourceLocatorsUnsubscribe: [],
    initialResourceVersions: {},
    responseNonce,
  };
  if (node) req.node = node;
  return req;
}
