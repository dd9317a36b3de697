/** Gateway API route filters and durations in VirtualService (JSON) terms, as istiod converts them. */
import type { JsonObject } from '@bufbuild/protobuf';
import type { BackendRef, HeaderModifier, PathModifier, RouteFilter } from '../../config/index.js';
import { parseGoDuration } from '../../util/duration.js';

/** A backend Service resolved to its FQDN (port when the ref names one). */
export interface BackendTarget {
  readonly host: string;
  readonly port?: number;
}

/** A Gateway API duration (`1h30m`, `500ms`; GEP-2257) as a protobuf JSON duration (`5400s`). */
export function gatewayApiDuration(d: string): string | undefined {
  if (d === '') return '0s';
  // The CRD pattern already rejected what is not GEP-2257 (a subset of Go's syntax, unsigned).
  const nanos = parseGoDuration(d);
  if (nanos === undefined || nanos < 0n) return undefined;
  // 0s means "no timeout" in Gateway API; VirtualService reads 0s the same way.
  return `${Number((Number(nanos) / 1e9).toFixed(3))}s`;
}

function headerOperations(m: HeaderModifier): JsonObject {
  const out: JsonObject = {};
  if (m.set?.length) out.set = Object.fromEntries(m.set.map((h) => [h.name, h.value]));
  if (m.add?.length) out.add = Object.fromEntries(m.add.map((h) => [h.name, h.value]));
  if (m.remove?.length) out.remove = [...m.remove];
  return out;
}

const fullPath = (p: PathModifier | undefined): string | undefined =>
  p?.type === 'ReplaceFullPath' ? p.replaceFullPath : p?.replacePrefixMatch;

/**
 * The VirtualService fields a rule's filters set: headers, redirect, rewrite, mirrors. An
 * ExtensionRef or CORS filter has no VirtualService form here and is left out.
 */
export function filterFields(filters: readonly RouteFilter[], resolve: (b: BackendRef) => BackendTarget | undefined): JsonObject {
  const out: JsonObject = {};
  const headers: JsonObject = {};
  const mirrors: JsonObject[] = [];
  for (const f of filters) {
    switch (f.type) {
      case 'RequestHeaderModifier':
        if (f.requestHeaderModifier) headers.request = headerOperations(f.requestHeaderModifier);
        break;
      case 'ResponseHeaderModifier':
        if (f.responseHeaderModifier) headers.response = headerOperations(f.responseHeaderModifier);
        break;
      case 'RequestRedirect': {
        const r = f.requestRedirect ?? {};
        const redirect: JsonObject = { redirectCode: r.statusCode ?? 302 };
        const uri = fullPath(r.path);
        if (uri !== undefined) redirect.uri = uri;
        if (r.hostname !== undefined) redirect.authority = r.hostname;
        if (r.scheme !== undefined) redirect.scheme = r.scheme;
        if (r.port !== undefined) redirect.port = r.port;
        out.redirect = redirect;
        break;
      }
      case 'URLRewrite': {
        const r = f.urlRewrite ?? {};
        const rewrite: JsonObject = {};
        if (r.hostname !== undefined) rewrite.authority = r.hostname;
        if (r.path?.type === 'ReplacePrefixMatch' && r.path.replacePrefixMatch !== undefined) rewrite.uri = r.path.replacePrefixMatch;
        // A full-path replacement is a regex rewrite of the whole path, as istiod writes it.
        if (r.path?.type === 'ReplaceFullPath' && r.path.replaceFullPath !== undefined)
          rewrite.uriRegexRewrite = { match: '/.*', rewrite: r.path.replaceFullPath };
        out.rewrite = rewrite;
        break;
      }
      case 'RequestMirror': {
        const m = f.requestMirror;
        const target = m && resolve(m.backendRef);
        if (!m || !target) break;
        const mirror: JsonObject = {
          destination: { host: target.host, ...(target.port !== undefined ? { port: { number: target.port } } : {}) },
        };
        const pct = m.percent ?? (m.fraction ? (100 * m.fraction.numerator) / (m.fraction.denominator ?? 100) : undefined);
        if (pct !== undefined) mirror.percentage = { value: pct };
        mirrors.push(mirror);
        break;
      }
      default:
        break;
    }
  }
  if (Object.keys(headers).length > 0) out.headers = headers;
  if (mirrors.length > 0) out.mirrors = mirrors;
  return out;
}
