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

/** Bytes of each end of an encoded value that, with its length, key its bucket. */
const KEY_END_BYTES = 48;
/** Values of different bytes kept under one key (same length and ends): more replace the oldest. */
const BUCKET_ENTRIES = 4;

interface Decoded<T> {
  readonly bytes: Buffer;
  readonly value: T;
}

/**
 * Decoded values by their encoded bytes (name lists, a stream's repeated node), least recently
 * used first out. A value is found by its length and the bytes at both ends, then checked byte for
 * byte: keying by all of its bytes made a string of each request's list (tens of KiB per ACK).
 */
export class DecodedByBytes<T> {
  readonly #values: BytesLru<string, Decoded<T>[]>;
  readonly #minBytes: number;
  hits = 0;
  misses = 0;

  constructor(opts: NameListMemoOptions) {
    this.#values = new BytesLru(opts.maxBytes);
    this.#minBytes = opts.minBytes ?? MIN_SHARED_BYTES;
  }

  /** The value encoded in `region`, decoded once per distinct bytes (it is shared: never mutate it). */
  of(region: Uint8Array, decode: () => T): T {
    const n = region.byteLength;
    if (n < this.#minBytes || n > this.#values.maxBytes) return decode();
    const b = Buffer.from(region.buffer, region.byteOffset, n);
    const key =
      n <= 2 * KEY_END_BYTES
        ? b.toString('latin1')
        : `${n}:${b.toString('latin1', 0, KEY_END_BYTES)}${b.toString('latin1', n - KEY_END_BYTES)}`;
    const bucket = this.#values.get(key);
    const known = bucket?.find((d) => d.bytes.equals(b));
    if (known) {
      this.hits++;
      return known.value;
    }
    this.misses++;
    const value = decode();
    // Copied: the request's buffer is not kept alive by its list.
    const next = [...(bucket ?? []).slice(1 - BUCKET_ENTRIES), { bytes: Buffer.from(b), value }];
    this.#values.set(key, next, next.length * n);
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
        names = extendRun(names, start, r, bytes);
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
 * The run extended by the entry whose tag was just read at `start`, and by every entry of the
 * same field right after it (their values skipped), or undefined when the entry does not follow
 * the run or the bytes end inside an entry: one run of consecutive entries (as every encoder
 * writes a list) is shared, anything else is decoded by protobuf-es. The entries are walked here
 * rather than with BinaryReader.skip, which returns each skipped value as a new Buffer: a list of
 * a thousand names cost a thousand Buffers per request.
 */
function extendRun(run: Run | undefined, start: number, r: BinaryReader, bytes: Uint8Array): Run | undefined {
  if (run && run[1] !== start) return undefined;
  const tag = bytes[start];
  // One-byte tags only (fields 1-15, as every field read here): the entry's tag is that byte.
  if (tag === undefined || r.pos !== start + 1) return undefined;
  let pos = r.pos;
  for (;;) {
    // The value's length, a varint of at most five bytes (protobuf caps lengths at 2^31 - 1).
    let len = 0;
    let shift = 0;
    let b: number;
    do {
      b = bytes[pos++] ?? 0x100;
      if (b === 0x100 || shift > 28) return undefined;
      len += (b & 0x7f) * 2 ** shift;
      shift += 7;
    } while (b & 0x80);
    pos += len;
    if (pos > bytes.length) return undefined;
    if (bytes[pos] !== tag) break;
    pos++;
  }
  r.pos = pos;
  return [run ? run[0] : start, pos];
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
        runs[field] = extendRun(runs[field], start, r, bytes);
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
