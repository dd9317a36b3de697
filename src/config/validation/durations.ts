/**
 * Istio YAML writes durations the Go way (`30ms`, `3m`, `1h30m`): istiod decodes with
 * golang/protobuf's jsonpb, which uses time.ParseDuration. Strict proto3 JSON (protobuf-es)
 * takes only seconds (`0.030s`), so Duration fields are rewritten before decoding.
 */
import type { DescMessage } from '@bufbuild/protobuf';
import { parseGoDuration, protoDurationJson } from '../../util/duration.js';

const DURATION = 'google.protobuf.Duration';
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A copy of `json` with every Go-style string in a Duration field rewritten; other values as they were. */
export function normalizeDurations(desc: DescMessage, json: unknown): unknown {
  if (!isRecord(json)) return json;
  const out: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(json)) {
    const f = desc.fields.find((x) => x.jsonName === name || x.name === name);
    out[name] = f ? normalizeField(f, value) : value;
  }
  return out;
}

function normalizeField(f: DescMessage['fields'][number], value: unknown): unknown {
  const one = (m: DescMessage, v: unknown): unknown => {
    if (m.typeName === DURATION) {
      if (typeof v !== 'string') return v;
      const nanos = parseGoDuration(v);
      return nanos === undefined ? v : protoDurationJson(nanos);
    }
    return m.typeName.startsWith('google.protobuf.') ? v : normalizeDurations(m, v);
  };
  if (f.fieldKind === 'message') return one(f.message, value);
  if (f.fieldKind === 'list' && f.listKind === 'message' && Array.isArray(value)) return value.map((v) => one(f.message, v));
  if (f.fieldKind === 'map' && f.mapKind === 'message' && isRecord(value)) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, one(f.message, v)]));
  }
  return value;
}
