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

/** Encodes an envoy.service.discovery.v3.DiscoveryResponse from pre-encoded resources. */
export function encodeDiscoveryResponse(r: SotwResponse): Uint8Array {
  const w = new BinaryWriter();
  if (r.versionInfo !== '') w.tag(1, WireType.LengthDelimited).string(r.versionInfo);
  for (const res of r.resources) w.tag(2, WireType.LengthDelimited).bytes(res.any);
  w.tag(4, WireType.LengthDelimited).string(r.typeUrl);
  w.tag(5, WireType.LengthDelimited).string(r.nonce);
  return w.finish();
}
