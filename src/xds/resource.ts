import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { createHash } from 'node:crypto';

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
}

export function makeResource(name: string, typeUrl: string, value: Uint8Array): XdsResource {
  const any = new BinaryWriter().tag(1, WireType.LengthDelimited).string(typeUrl).tag(2, WireType.LengthDelimited).bytes(value).finish();
  const version = createHash('sha1').update(value).digest('base64url').slice(0, 16);
  return { name, typeUrl, value, any, version };
}

export interface SotwResponse {
  readonly versionInfo: string;
  readonly typeUrl: string;
  readonly nonce: string;
  readonly resources: readonly XdsResource[];
}

/** Encoded size of a DiscoveryResponse (what encodeDiscoveryResponse gives for the same fields). */
export function sotwResponseSize(r: Omit<SotwResponse, 'nonce'> & { readonly nonceLength: number }): number {
  let size = (r.versionInfo !== '' ? fieldSize(utf8Length(r.versionInfo)) : 0) + fieldSize(utf8Length(r.typeUrl)) + fieldSize(r.nonceLength);
  for (const res of r.resources) size += fieldSize(res.any.byteLength);
  return size;
}

/** Encodes an envoy.service.discovery.v3.DiscoveryResponse from pre-encoded resources. */
export function encodeDiscoveryResponse(r: SotwResponse): Uint8Array {
  const w = new BinaryWriter();
  if (r.versionInfo !== '') w.tag(1, WireType.LengthDelimited).string(r.versionInfo);
  for (const res of r.resources) w.tag(2, WireType.LengthDelimited).bytes(res.any);
  w.tag(4, WireType.LengthDelimited).string(r.typeUrl);
  w.tag(5, WireType.LengthDelimited).string(r.nonce);
  return w.finish();
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

/** Encoded size of envoy.service.discovery.v3.Resource{name, version, resource} (without its field tag). */
function deltaResourceBodySize(r: XdsResource): number {
  return fieldSize(utf8Length(r.name)) + fieldSize(utf8Length(r.version)) + fieldSize(r.any.byteLength);
}

/** Bytes one resource adds to a DeltaDiscoveryResponse. */
export function deltaResourceSize(r: XdsResource): number {
  return fieldSize(deltaResourceBodySize(r));
}

/** Bytes one removed name adds to a DeltaDiscoveryResponse. */
export function removedNameSize(name: string): number {
  return fieldSize(utf8Length(name));
}

/** Bytes of a DeltaDiscoveryResponse's fixed fields (version, type, nonce) with no resources. */
export function deltaEnvelopeSize(systemVersionInfo: string, typeUrl: string, nonceLength: number): number {
  return (systemVersionInfo !== '' ? fieldSize(utf8Length(systemVersionInfo)) : 0) + fieldSize(utf8Length(typeUrl)) + fieldSize(nonceLength);
}

/** Encodes an envoy.service.discovery.v3.DeltaDiscoveryResponse, splicing each resource's cached Any. */
export function encodeDeltaResponse(r: DeltaResponse): Uint8Array {
  const w = new BinaryWriter();
  if (r.systemVersionInfo !== '') w.tag(1, WireType.LengthDelimited).string(r.systemVersionInfo);
  for (const res of r.resources) {
    w.tag(2, WireType.LengthDelimited).uint32(deltaResourceBodySize(res));
    w.tag(3, WireType.LengthDelimited).string(res.name);
    w.tag(1, WireType.LengthDelimited).string(res.version);
    w.tag(2, WireType.LengthDelimited).bytes(res.any);
  }
  w.tag(4, WireType.LengthDelimited).string(r.typeUrl);
  w.tag(5, WireType.LengthDelimited).string(r.nonce);
  for (const name of r.removed) w.tag(6, WireType.LengthDelimited).string(name);
  return w.finish();
}
