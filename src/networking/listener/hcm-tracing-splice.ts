/**
 * Per-workload HCM tracing laid into listeners encoded once for many workloads. The outbound
 * listeners of a Sidecar scope are the same for every workload in it but for the HCM's tracing,
 * whose Istio tags name the workload (canonical service and revision): the scope's listeners are
 * built and encoded once without it, and each workload's tracing is inserted into the encoded
 * bytes. The result is byte for byte what encoding the listener with the tracing set gives
 * (fields in number order, as protobuf-es writes them), so caching per scope costs no fidelity.
 */
import { BinaryReader, BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { makeResource, type XdsResource } from '../../xds/index.js';
import { HttpConnectionManagerSchema } from '../../gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js';

const HCM_TYPE_URL = `type.googleapis.com/${HttpConnectionManagerSchema.typeName}`;

// Field numbers on the path Listener → FilterChain → Filter → Any → HttpConnectionManager.
const LISTENER_FILTER_CHAINS = 3;
const LISTENER_DEFAULT_FILTER_CHAIN = 25;
const FILTER_CHAIN_FILTERS = 3;
const FILTER_TYPED_CONFIG = 4;
const ANY_TYPE_URL = 1;
const ANY_VALUE = 2;
const HCM_TRACING = 7;

/**
 * `bytes` with the body of every length-delimited field in `fields` replaced by `rewrite(body)`;
 * the same array when no body changed.
 */
function rewriteFields(
  bytes: Uint8Array,
  fields: ReadonlySet<number>,
  rewrite: (body: Uint8Array, field: number) => Uint8Array,
): Uint8Array {
  const r = new BinaryReader(bytes);
  let w: BinaryWriter | undefined;
  let copied = 0;
  while (r.pos < r.len) {
    const start = r.pos;
    const [no, wt] = r.tag();
    if (wt !== WireType.LengthDelimited || !fields.has(no)) {
      r.skip(wt, no);
      continue;
    }
    const len = r.uint32();
    const body = bytes.subarray(r.pos, r.pos + len);
    r.pos += len;
    const next = rewrite(body, no);
    if (next === body) continue;
    w ??= new BinaryWriter();
    w.raw(bytes.subarray(copied, start)).tag(no, WireType.LengthDelimited).bytes(next);
    copied = r.pos;
  }
  return w ? w.raw(bytes.subarray(copied)).finish() : bytes;
}

/** The Any's type URL, read without decoding its value. */
function anyTypeUrl(any: Uint8Array): string | undefined {
  const r = new BinaryReader(any);
  while (r.pos < r.len) {
    const [no, wt] = r.tag();
    if (no === ANY_TYPE_URL && wt === WireType.LengthDelimited) return r.string();
    r.skip(wt, no);
  }
  return undefined;
}

/** An encoded HCM with `tracing` as field 7, placed before the first field numbered above it. */
function hcmWithTracing(hcm: Uint8Array, tracing: Uint8Array): Uint8Array {
  const r = new BinaryReader(hcm);
  let at = hcm.length;
  while (r.pos < r.len) {
    const start = r.pos;
    const [no, wt] = r.tag();
    if (no === HCM_TRACING) throw new Error('hcm tracing splice: the shared listener already carries tracing');
    if (no > HCM_TRACING) {
      at = start;
      break;
    }
    r.skip(wt, no);
  }
  return new BinaryWriter()
    .raw(hcm.subarray(0, at))
    .tag(HCM_TRACING, WireType.LengthDelimited)
    .bytes(tracing)
    .raw(hcm.subarray(at))
    .finish();
}

const CHAINS = new Set([LISTENER_FILTER_CHAINS, LISTENER_DEFAULT_FILTER_CHAIN]);
const FILTERS = new Set([FILTER_CHAIN_FILTERS]);
const TYPED_CONFIG = new Set([FILTER_TYPED_CONFIG]);
const VALUE = new Set([ANY_VALUE]);

/** An encoded Listener whose every HTTP connection manager gets `tracing` (encoded HttpConnectionManager.Tracing). */
export function listenerWithHcmTracing(listener: Uint8Array, tracing: Uint8Array): Uint8Array {
  return rewriteFields(listener, CHAINS, (chain) =>
    rewriteFields(chain, FILTERS, (filter) =>
      rewriteFields(filter, TYPED_CONFIG, (any) =>
        anyTypeUrl(any) === HCM_TYPE_URL ? rewriteFields(any, VALUE, (hcm) => hcmWithTracing(hcm, tracing)) : any,
      ),
    ),
  );
}

const spliced = new WeakMap<readonly XdsResource[], WeakMap<Uint8Array, readonly XdsResource[]>>();

/**
 * `listeners` (encoded without tracing) with `tracing` in each HCM; listeners without an HCM are
 * the same resource objects. Memoized on the identities of both, so workloads with the same
 * tracing share one list, and a rebuilt shared list or tracing (a config change) is a new key;
 * nothing here holds a dependency of its own.
 */
export function withHcmTracing(listeners: readonly XdsResource[], tracing: Uint8Array | undefined): readonly XdsResource[] {
  if (!tracing) return listeners;
  let byTracing = spliced.get(listeners);
  if (!byTracing) spliced.set(listeners, (byTracing = new WeakMap()));
  let out = byTracing.get(tracing);
  if (!out) {
    out = Object.freeze(
      listeners.map((l) => {
        const value = listenerWithHcmTracing(l.value, tracing);
        return value === l.value ? l : makeResource(l.name, l.typeUrl, value);
      }),
    );
    byTracing.set(tracing, out);
  }
  return out;
}
