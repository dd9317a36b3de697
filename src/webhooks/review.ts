/**
 * AdmissionReview on the wire (admission.k8s.io v1 and v1beta1): the request decoded into the seam's
 * AdmissionRequest, the response written back in the apiVersion the API server sent (as istiod
 * does). Decoding never throws: it names what is wrong and where, for a 400.
 */
import type { AdmissionRequest, AdmissionResponse } from './admission.js';

export const ADMISSION_API_VERSIONS = ['admission.k8s.io/v1', 'admission.k8s.io/v1beta1'] as const;
export type AdmissionApiVersion = (typeof ADMISSION_API_VERSIONS)[number];

export type DecodedReview =
  | { readonly ok: true; readonly apiVersion: AdmissionApiVersion; readonly request: AdmissionRequest }
  | { readonly ok: false; readonly error: string };

const OPERATIONS: ReadonlySet<string> = new Set(['CREATE', 'UPDATE', 'DELETE', 'CONNECT']);

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Parses a request body (already read, size-checked) as an AdmissionReview with a request. */
export function decodeAdmissionReview(body: string): DecodedReview {
  let doc: unknown;
  try {
    doc = JSON.parse(body);
  } catch (err) {
    return { ok: false, error: `could not decode body: ${(err as Error).message}` };
  }
  if (!isRecord(doc)) return { ok: false, error: 'could not decode body: expected a JSON object (an AdmissionReview)' };
  const { apiVersion, kind, request } = doc;
  if (kind !== 'AdmissionReview') return { ok: false, error: `kind: expected "AdmissionReview", got ${JSON.stringify(kind)}` };
  if (typeof apiVersion !== 'string' || !(ADMISSION_API_VERSIONS as readonly string[]).includes(apiVersion)) {
    return { ok: false, error: `apiVersion: expected one of ${ADMISSION_API_VERSIONS.join(', ')}, got ${JSON.stringify(apiVersion)}` };
  }
  if (!isRecord(request)) return { ok: false, error: 'request: missing (an AdmissionReview sent to a webhook carries a request)' };
  const decoded = decodeRequest(request);
  return typeof decoded === 'string'
    ? { ok: false, error: decoded }
    : { ok: true, apiVersion: apiVersion as AdmissionApiVersion, request: decoded };
}

/** The request fields the seam carries; a string is the error. */
function decodeRequest(r: Record<string, unknown>): AdmissionRequest | string {
  if (typeof r.uid !== 'string' || r.uid === '') return 'request.uid: missing or not a string';
  if (typeof r.operation !== 'string' || !OPERATIONS.has(r.operation)) {
    return `request.operation: expected one of ${[...OPERATIONS].join(', ')}, got ${JSON.stringify(r.operation)}`;
  }
  const kind = groupVersionField(r.kind, 'kind', 'request.kind');
  if (typeof kind === 'string') return kind;
  const resource = groupVersionField(r.resource, 'resource', 'request.resource');
  if (typeof resource === 'string') return resource;
  for (const f of ['subResource', 'name', 'namespace'] as const) {
    if (r[f] !== undefined && typeof r[f] !== 'string') return `request.${f}: expected a string`;
  }
  if (r.dryRun !== undefined && typeof r.dryRun !== 'boolean') return 'request.dryRun: expected a boolean';
  const out: AdmissionRequest = {
    uid: r.uid,
    kind: { group: kind.group, version: kind.version, kind: kind.name },
    resource: { group: resource.group, version: resource.version, resource: resource.name },
    operation: r.operation as AdmissionRequest['operation'],
  };
  if (typeof r.subResource === 'string' && r.subResource !== '') out.subResource = r.subResource;
  if (typeof r.name === 'string' && r.name !== '') out.name = r.name;
  if (typeof r.namespace === 'string' && r.namespace !== '') out.namespace = r.namespace;
  if (r.object !== undefined && r.object !== null) out.object = r.object;
  if (r.oldObject !== undefined && r.oldObject !== null) out.oldObject = r.oldObject;
  if (r.dryRun === true) out.dryRun = true;
  const user = userInfo(r.userInfo);
  if (user) out.userInfo = user;
  return out;
}

function groupVersionField(
  v: unknown,
  nameKey: 'kind' | 'resource',
  where: string,
): { group: string; version: string; name: string } | string {
  if (!isRecord(v)) return `${where}: missing (expected {group, version, ${nameKey}})`;
  const group = v.group ?? '';
  const { version } = v;
  const name = v[nameKey];
  if (typeof group !== 'string') return `${where}.group: expected a string`;
  if (typeof version !== 'string' || version === '') return `${where}.version: missing or not a string`;
  if (typeof name !== 'string' || name === '') return `${where}.${nameKey}: missing or not a string`;
  return { group, version, name };
}

function userInfo(v: unknown): AdmissionRequest['userInfo'] {
  if (!isRecord(v)) return undefined;
  const out: NonNullable<AdmissionRequest['userInfo']> = {};
  if (typeof v.username === 'string') out.username = v.username;
  if (Array.isArray(v.groups)) out.groups = v.groups.filter((g): g is string => typeof g === 'string');
  return out;
}

/** The AdmissionReview answer: same apiVersion as the request, the request's uid whatever the handler said. */
export function encodeAdmissionReview(apiVersion: AdmissionApiVersion, uid: string, response: AdmissionResponse): string {
  const r: Record<string, unknown> = { uid, allowed: response.allowed };
  if (response.status) r.status = response.status;
  if (response.warnings && response.warnings.length > 0) r.warnings = response.warnings;
  if (response.patch !== undefined) {
    r.patch = response.patch;
    r.patchType = response.patchType ?? 'JSONPatch';
  }
  return JSON.stringify({ apiVersion, kind: 'AdmissionReview', response: r });
}
