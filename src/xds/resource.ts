import { WireType } from '@bufbuild/protobuf/wire';
import { createHash } from 'node:crypto';
import { BytesLru } from '../util/bytes-lru.js';
import { PiecesMessage, wireBytes, type Piece, type WireMessage } from './wire-message.js';

/**
 * One generated xDS resource, marshalled once: `any` holds the encoded google.protobuf.Any, ready
 * to be spliced into any number of DiscoveryResponses (SotW) or Delta Resources without re-encoding.
 */
export interface XdsResource {
  readonly name: string;
  readonly typeUrl: string;
  /** Encoded resource message (the Any's value). */
  readonly value: Uint8Array;
  /** Encoded google.protobuf.Any { type_url, value }. */
  readonly any: Uint8Array;
  /** Content hash: the per-resource version for Delta and the "did it change" check. */
  readonly version: string;
  /** Encoded envoy.service.discovery.v3.Resource { name, version, resource: the Any }, as Delta sends it. */
  readonly entry: Uint8Array;
}

export function makeResource(name: string, typeUrl: string, value: Uint8Array): XdsResource {
  const version = createHash('sha1').update(value).digest('base64url').slice(0, 16);
  const anySize = fieldSize(utf8Length(typeUrl)) + fieldSize(value.byteLength);
  const entrySize = fieldSize(utf8Length(name)) + fieldSize(version.length) + fieldSize(anySize);
  // Its own buffer (not a slice of Node's shared pool, which one cached resource would pin).
  const entry = new Uint8Array(entrySize);
  new ExactWriter(entrySize, Buffer.from(entry.buffer, 0, entrySize))
    .string(3, name)
    .string(1, version)
    .open(2, anySize)
    .string(1, typeUrl)
    .bytes(2, value)
    .finish();
  // One buffer, three views: the Delta entry ends with the Any, which ends with the value (cached
  // resources are most of the heap's bytes; Delta responses then copy one block per resource).
  const any = entry.subarray(entrySize - anySize);
  return { name, typeUrl, value: any.subarray(anySize - value.byteLength), any, version, entry };
}

export interface SotwResponse {
  readonly versionInfo: string;
  readonly typeUrl: string;
  readonly nonce: string;
  readonly resources: readonly XdsResource[];
}

/**
 * Writes length-delimited protobuf fields into a buffer of the exact final size: a response is
 * mostly spliced pre-encoded resources, so each byte is copied once (BinaryWriter grows and
 * re-copies its buffer, then copies every chunk again in finish()).
 */
class ExactWriter {
  readonly #end: number;
  #pos: number;

  /** Writes `size` bytes into `buf` from `start` (a fresh buffer of that size by default). */
  constructor(
    size: number,
    readonly buf: Buffer = Buffer.allocUnsafe(size),
    start = 0,
  ) {
    this.#pos = start;
    this.#end = start + size;
  }

  /** A one-byte tag (field < 16, wire type 2) and the length varint. */
  #head(field: number, len: number): void {
    this.buf[this.#pos++] = (field << 3) | WireType.LengthDelimited;
    while (len >= 0x80) {
      this.buf[this.#pos++] = (len & 0x7f) | 0x80;
      len = Math.floor(len / 128);
    }
    this.buf[this.#pos++] = len;
  }

  /** The header of a nested message whose body the next writes fill. */
  open(field: number, len: number): this {
    this.#head(field, len);
    return this;
  }

  bytes(field: number, value: Uint8Array): this {
    this.#head(field, value.byteLength);
    this.buf.set(value, this.#pos);
    this.#pos += value.byteLength;
    return this;
  }

  string(field: number, value: string): this {
    this.#head(field, utf8Length(value));
    this.#pos += this.buf.write(value, this.#pos, 'utf8');
    return this;
  }

  finish(): Buffer {
    if (this.#pos !== this.#end) throw new Error(`response size mismatch: wrote to ${this.#pos}, the message ends at ${this.#end}`);
    return this.buf;
  }
}

const asBuffer = (t: Uint8Array): Buffer => (Buffer.isBuffer(t) ? t : Buffer.from(t.buffer, t.byteOffset, t.byteLength));

/**
 * The `resources` fields of recently sent shared lists, encoded as one block: a push sends the
 * same list to every proxy of a view, and the transport writes one shared block instead of
 * splicing a thousand resources again per proxy. Bounded in bytes (least recently used out): a
 * block lives through the push that needs it, not as a second copy of every cached list.
 */
class RecentBlocks {
  /** With the list's length when encoded: a list grown since (none should be) is encoded again. */
  readonly #blocks: BytesLru<readonly XdsResource[], { readonly count: number; readonly block: Uint8Array }>;

  /** `bytesOf`: what a resource is in this kind of response (SotW: its Any; Delta: its entry). */
  constructor(
    maxBytes: number,
    readonly bytesOf: (r: XdsResource) => Uint8Array,
  ) {
    this.#blocks = new BytesLru(maxBytes);
  }

  of(list: readonly XdsResource[]): Uint8Array {
    const held = this.#blocks.get(list);
    if (held?.count === list.length) return held.block;
    const size = this.sizeOf(list);
    const block = new Uint8Array(size);
    const w = new ExactWriter(size, asBuffer(block));
    this.write(w, list);
    w.finish();
    this.#blocks.set(list, { count: list.length, block }, size);
    return block;
  }

  /** Bytes of a list's `resources` fields. */
  sizeOf(list: readonly XdsResource[]): number {
    let size = 0;
    for (const res of list) size += fieldSize(this.bytesOf(res).byteLength);
    return size;
  }

  /** A list's `resources` fields, resource by resource. */
  write(w: ExactWriter, list: readonly XdsResource[]): void {
    for (const res of list) w.bytes(2, this.bytesOf(res));
  }
}

/** Lists shorter than this are spliced directly (a block is not worth holding). */
const MIN_BLOCK_RESOURCES = 16;
const sotwBlocks = new RecentBlocks(32 << 20, (r) => r.any);
const deltaBlocks = new RecentBlocks(32 << 20, (r) => r.entry);

/** A response as pieces: its own fields written in place, long shared lists as their recent blocks. */
class ResponseBuilder {
  readonly #pieces: Piece[] = [];

  /** Fields `fill` writes, exactly `size` bytes. */
  fields(size: number, fill: (w: ExactWriter) => void): this {
    if (size > 0) {
      this.#pieces.push({
        size,
        fill(target: Uint8Array, start: number) {
          const w = new ExactWriter(size, asBuffer(target), start);
          fill(w);
          w.finish();
        },
      });
    }
    return this;
  }

  /** A list's `resources` fields: a joined list part by part, a long part as its recent block. */
  resources(list: readonly XdsResource[], blocks: RecentBlocks): this {
    const parts = joinedParts(list);
    if (parts) return this.resources(parts.head, blocks).resources(parts.tail, blocks);
    if (list.length >= MIN_BLOCK_RESOURCES) {
      this.#pieces.push(blocks.of(list));
      return this;
    }
    return this.fields(blocks.sizeOf(list), (w) => blocks.write(w, list));
  }

  message(): WireMessage {
    return new PiecesMessage(this.#pieces);
  }
}

/** An envoy.service.discovery.v3.DiscoveryResponse of pre-encoded resources, laid out by the transport. */
export function discoveryResponseMessage(r: SotwResponse): WireMessage {
  const b = new ResponseBuilder();
  if (r.versionInfo !== '') b.fields(fieldSize(utf8Length(r.versionInfo)), (w) => w.string(1, r.versionInfo));
  return b
    .resources(r.resources, sotwBlocks)
    .fields(fieldSize(utf8Length(r.typeUrl)) + fieldSize(utf8Length(r.nonce)), (w) => w.string(4, r.typeUrl).string(5, r.nonce))
    .message();
}

/** The same response's bytes. */
export function encodeDiscoveryResponse(r: SotwResponse): Uint8Array {
  return wireBytes(discoveryResponseMessage(r));
}

export interface DeltaResponse {
  readonly systemVersionInfo: string;
  readonly typeUrl: string;
  readonly nonce: string;
  readonly resources: readonly XdsResource[];
  readonly removed: readonly string[];
}

function varintSize(n: number): number {
  let size = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 128);
    size++;
  }
  return size;
}

/** Size of one length-delimited field with a one-byte tag. */
function fieldSize(len: number): number {
  return 1 + varintSize(len) + len;
}

function utf8Length(s: string): number {
  return Buffer.byteLength(s, 'utf8');
}

/** Bytes one resource adds to a DeltaDiscoveryResponse. */
export function deltaResourceSize(r: XdsResource): number {
  return fieldSize(r.entry.byteLength);
}

const deltaListSizes = new WeakMap<readonly XdsResource[], { readonly count: number; readonly bytes: number }>();

/**
 * Bytes a list of resources adds to a DeltaDiscoveryResponse, summed once per list (a joined list
 * part by part): streams in step are sent the same shared list.
 */
export function deltaListSize(list: readonly XdsResource[]): number {
  const known = deltaListSizes.get(list);
  if (known?.count === list.length) return known.bytes;
  const parts = joinedParts(list);
  let bytes = 0;
  if (parts) bytes = deltaListSize(parts.head) + deltaListSize(parts.tail);
  else for (const r of list) bytes += deltaResourceSize(r);
  deltaListSizes.set(list, { count: list.length, bytes });
  return bytes;
}

/** Bytes one removed name adds to a DeltaDiscoveryResponse. */
export function removedNameSize(name: string): number {
  return fieldSize(utf8Length(name));
}

/** Bytes of a DeltaDiscoveryResponse's fixed fields (version, type, nonce) with no resources. */
export function deltaEnvelopeSize(systemVersionInfo: string, typeUrl: string, nonceLength: number): number {
  return (
    (systemVersionInfo !== '' ? fieldSize(utf8Length(systemVersionInfo)) : 0) + fieldSize(utf8Length(typeUrl)) + fieldSize(nonceLength)
  );
}

/** An envoy.service.discovery.v3.DeltaDiscoveryResponse of pre-encoded resources, laid out by the transport. */
export function deltaResponseMessage(r: DeltaResponse): WireMessage {
  const b = new ResponseBuilder();
  if (r.systemVersionInfo !== '') b.fields(fieldSize(utf8Length(r.systemVersionInfo)), (w) => w.string(1, r.systemVersionInfo));
  let tail = fieldSize(utf8Length(r.typeUrl)) + fieldSize(utf8Length(r.nonce));
  for (const name of r.removed) tail += removedNameSize(name);
  return b
    .resources(r.resources, deltaBlocks)
    .fields(tail, (w) => {
      w.string(4, r.typeUrl).string(5, r.nonce);
      for (const name of r.removed) w.string(6, name);
    })
    .message();
}

/** The same response's bytes. */
export function encodeDeltaResponse(r: DeltaResponse): Uint8Array {
  return wireBytes(deltaResponseMessage(r));
}

/** Lists (and single resources) of equal content by their signature; weak, so a value no one holds leaves. */
const internedValues = new Map<string, WeakRef<object>>();
const internedGone = new FinalizationRegistry<string>((key) => {
  if (internedValues.get(key)?.deref() === undefined) internedValues.delete(key);
});
/** Longer lists are not interned: their signature would cost more than sharing saves (they are per view anyway). */
const MAX_INTERNED_LIST = 64;

/**
 * The same object for equal content: a workload's own resources (its inbound clusters, its
 * virtualInbound listener) are alike across the replicas of a deployment and across proxies without
 * instances, though each is built and cached for its own workload. Shared, they make the lists
 * joined with them (joinResources) and the plans diffed from those shared too: a change to a view
 * then costs one joined list and one plan, not one per proxy. Equal name, type and version (a hash
 * of the bytes) is equal content.
 */
export function internResources<T extends XdsResource | readonly XdsResource[]>(value: T): T {
  const list: readonly XdsResource[] = Array.isArray(value) ? (value as readonly XdsResource[]) : [value as XdsResource];
  if (list.length > MAX_INTERNED_LIST) return value;
  let key = Array.isArray(value) ? 'list' : 'one';
  for (const r of list) key += `\n${r.typeUrl}\n${r.name}\n${r.version}`;
  const known = internedValues.get(key)?.deref();
  if (known !== undefined) return known as T;
  internedValues.set(key, new WeakRef(value));
  internedGone.register(value, key);
  return value;
}

const joinedLists = new WeakMap<object, WeakMap<object, readonly XdsResource[]>>();

/**
 * `head` followed by `tail`, the same array for the same two parts: a response assembled from
 * cached parts (a view's outbound clusters, a workload's inbound ones) is then identical from push
 * to push, so the stream sees "unchanged" by identity instead of comparing hundreds of resources.
 * Weak on both parts: the result lives as long as they do.
 */
export function joinResources(head: readonly XdsResource[], tail: readonly XdsResource[] | XdsResource): readonly XdsResource[] {
  let byTail = joinedLists.get(head);
  if (!byTail) joinedLists.set(head, (byTail = new WeakMap()));
  let joined = byTail.get(tail);
  if (!joined) {
    const tailList: readonly XdsResource[] = Array.isArray(tail) ? (tail as readonly XdsResource[]) : [tail as XdsResource];
    joined = Object.freeze([...head, ...tailList]);
    byTail.set(tail, joined);
    partsOfJoined.set(joined, { head, tail: tailList });
  }
  return joined;
}

/** The shared parts a joined list was made of (its head is typically shared by a whole view). */
const partsOfJoined = new WeakMap<readonly XdsResource[], JoinedParts>();

export interface JoinedParts {
  readonly head: readonly XdsResource[];
  readonly tail: readonly XdsResource[];
}

/** The parts of a list made by joinResources, or undefined for any other list. */
export function joinedParts(list: readonly XdsResource[]): JoinedParts | undefined {
  return partsOfJoined.get(list);
}
