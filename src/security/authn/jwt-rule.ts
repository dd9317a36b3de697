/**
 * istiod's JWT_RULE env: a JSON JWTRule (`{"issuer": "...", "audiences": [...], "jwks_uri": "..."}`)
 * for CSR/xDS authentication without Kubernetes. istiod reads it with Go's encoding/json, so keys
 * match case-insensitively and `jwks_uri` is snake_case; we also accept `jwksUri` and our own
 * `jwks` (inline JWKS, a JSON string as in JWTRule or an object). Unlike istiod, unknown keys and
 * an empty audience list are errors (istiod would ignore the one and reject every token for the other).
 */
import { MeshError } from '../../util/errors.js';

export interface JwtRule {
  readonly issuer: string;
  readonly audiences: readonly string[];
  /** https:// or file:// URL of the JWKS; absent with `jwks` absent → OIDC discovery from the issuer. */
  readonly jwksUri?: string;
  /** Inline JWKS JSON. */
  readonly jwks?: string;
}

const KEYS: Record<string, 'issuer' | 'audiences' | 'jwksUri' | 'jwks'> = {
  issuer: 'issuer',
  audiences: 'audiences',
  jwks_uri: 'jwksUri',
  jwksuri: 'jwksUri',
  jwks: 'jwks',
};

const bad = (msg: string): MeshError => new MeshError('INVALID_ARGUMENT', `JWT_RULE: ${msg}`);

export function parseJwtRule(text: string): JwtRule {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw bad(`not JSON (${(err as Error).message})`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw bad('must be a JSON object {"issuer", "audiences", "jwks_uri"}');
  const fields: { issuer?: unknown; audiences?: unknown; jwksUri?: unknown; jwks?: unknown } = {};
  for (const [k, v] of Object.entries(raw)) {
    const key = KEYS[k.toLowerCase()];
    if (!key) throw bad(`unknown field "${k}" (known: issuer, audiences, jwks_uri, jwks)`);
    fields[key] = v;
  }
  if (typeof fields.issuer !== 'string' || fields.issuer === '') throw bad('"issuer" must be a non-empty string');
  const aud = fields.audiences;
  if (!Array.isArray(aud) || aud.length === 0 || !aud.every((a) => typeof a === 'string' && a !== ''))
    throw bad('"audiences" must be a non-empty list of strings');
  const rule: { -readonly [K in keyof JwtRule]: JwtRule[K] } = { issuer: fields.issuer, audiences: aud as string[] };
  if (fields.jwksUri !== undefined && fields.jwksUri !== '') {
    if (typeof fields.jwksUri !== 'string' || !/^(https|file):\/\//.test(fields.jwksUri))
      throw bad('"jwks_uri" must be an https:// or file:// URL');
    rule.jwksUri = fields.jwksUri;
  }
  if (fields.jwks !== undefined && fields.jwks !== '') {
    const jwks = typeof fields.jwks === 'string' ? fields.jwks : JSON.stringify(fields.jwks);
    try {
      const parsed = JSON.parse(jwks) as { keys?: unknown };
      if (!Array.isArray(parsed.keys)) throw new Error('no "keys" list');
    } catch (err) {
      throw bad(`"jwks" is not a JWKS (${(err as Error).message})`);
    }
    rule.jwks = jwks;
  }
  if (rule.jwks !== undefined && rule.jwksUri !== undefined) throw bad('set "jwks" or "jwks_uri", not both');
  return rule;
}
