/**
 * RequestAuthentication's JWT rules: istiod's validateJwtRule, plus the two rules the CRD schema
 * adds (jwks and jwksUri are exclusive; jwksUri at most 2048 characters), since a cluster's API
 * server rejects those objects before istiod sees them. An inline JWKS is also checked as Envoy
 * loads it (each key must be a usable public key), since Envoy refuses the whole listener otherwise.
 */
import { createPublicKey, type JsonWebKey } from 'node:crypto';
import type { JWTRule } from '../../gen/security/v1beta1/request_authentication_pb.js';
import { checkDuration, checkHeaderName } from './common.js';
import { field, index, type Issues } from './issues.js';

const MAX_JWKS_URI = 2048;
const MAX_SPACE_DELIMITED_CLAIMS = 64;

export function validateJwtRule(issues: Issues, path: string, rule: JWTRule): void {
  rule.audiences.forEach((a, i) => {
    if (a === '') issues.add(index(field(path, 'audiences'), i), 'audience must be non-empty string');
  });
  if (rule.issuer === '' && rule.jwksUri === '') issues.add(field(path, 'issuer'), 'issuer or jwksUri must be non-empty string');
  if (rule.jwksUri !== '') issues.check(field(path, 'jwksUri'), checkJwksUri(rule.jwksUri));
  if (rule.jwks !== '') {
    if (rule.jwksUri !== '') issues.add(path, 'only one of jwks or jwksUri can be set');
    const jwksError = checkJwks(rule.jwks);
    issues.check(field(path, 'jwks'), jwksError);
    if (jwksError === undefined) warnPrivateJwks(issues, field(path, 'jwks'), rule.jwks);
  }
  rule.fromHeaders.forEach((h, i) => {
    if (h.name === '') issues.add(field(index(field(path, 'fromHeaders'), i), 'name'), 'location header name must be non-empty string');
  });
  rule.fromParams.forEach((q, i) => {
    if (q === '') issues.add(index(field(path, 'fromParams'), i), 'location query must be non-empty string');
  });
  rule.fromCookies.forEach((c, i) => {
    if (c === '') issues.add(index(field(path, 'fromCookies'), i), 'cookie name must be non-empty string');
  });
  rule.outputClaimToHeaders.forEach((c, i) => {
    const p = index(field(path, 'outputClaimToHeaders'), i);
    if (c.claim === '' || c.header === '') issues.add(p, 'outputClaimToHeaders header and claim value must be non-empty string');
    else issues.check(field(p, 'header'), checkHeaderName(c.header));
  });
  if (rule.spaceDelimitedClaims.length > MAX_SPACE_DELIMITED_CLAIMS) {
    issues.add(field(path, 'spaceDelimitedClaims'), `at most ${MAX_SPACE_DELIMITED_CLAIMS} claims allowed`);
  }
  rule.spaceDelimitedClaims.forEach((c, i) => {
    if (c === '') issues.add(index(field(path, 'spaceDelimitedClaims'), i), 'claim name must be non-empty string');
  });
  if (rule.timeout) issues.check(field(path, 'timeout'), checkDuration(rule.timeout));
}

/** istiod's ParseJwksURI: an http or https URL (Envoy fetches it as a remote JWKS). */
export function checkJwksUri(uri: string): string | undefined {
  if (uri.length > MAX_JWKS_URI) return `jwksUri must be at most ${MAX_JWKS_URI} characters`;
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):/.exec(uri)?.[1]?.toLowerCase() ?? '';
  if (scheme !== 'http' && scheme !== 'https')
    return `URI scheme "${scheme}" is not supported (jwksUri must be an http:// or https:// URL)`;
  try {
    new URL(uri);
    return undefined;
  } catch {
    return `invalid jwksUri "${uri}": not a valid URL`;
  }
}

// Members each key type needs (RFC 7518 section 6), as a JWKS parser requires them.
const KEY_MEMBERS: Readonly<Record<string, readonly string[]>> = { RSA: ['n', 'e'], EC: ['crv', 'x', 'y'], OKP: ['crv', 'x'], oct: ['k'] };

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** An inline JWKS: a JSON key set (`{"keys": [...]}`) or a single JWK, each key complete. */
export function checkJwks(jwks: string): string | undefined {
  let doc: unknown;
  try {
    doc = JSON.parse(jwks);
  } catch (err) {
    return `jwks parse error: ${err instanceof Error ? err.message : String(err)}`;
  }
  if (!isRecord(doc)) return 'jwks parse error: expected a JSON object';
  const keys = 'keys' in doc ? doc.keys : [doc];
  if (!Array.isArray(keys)) return 'jwks parse error: "keys" must be an array';
  for (let i = 0; i < keys.length; i++) {
    const k: unknown = keys[i];
    if (!isRecord(k)) return `jwks parse error: key ${i} is not an object`;
    const kty = k.kty;
    if (typeof kty !== 'string' || kty === '') return `jwks parse error: key ${i} has no "kty"`;
    const members = KEY_MEMBERS[kty];
    if (!members) return `jwks parse error: key ${i} has unsupported "kty" ${JSON.stringify(kty)}`;
    const missing = members.find((m) => typeof k[m] !== 'string' || k[m] === '');
    if (missing !== undefined) return `jwks parse error: ${kty} key ${i} is missing "${missing}"`;
    const unusable = unusableKey(k as JsonWebKey);
    if (unusable !== undefined) return `jwks parse error: ${kty} key ${i} ${unusable}`;
  }
  return undefined;
}

/**
 * Why Envoy's JWKS loader (BoringSSL) cannot use a public key, or undefined. An RSA modulus must
 * be odd (a product of two odd primes): Envoy answers "[n] or [e] field is missing or has a parse
 * error" for an even one, which a JWK parser alone accepts.
 */
function unusableKey(k: JsonWebKey): string | undefined {
  if (k.kty === 'oct') return undefined;
  try {
    createPublicKey({ key: k, format: 'jwk' });
  } catch (err) {
    return `is not a usable public key (${err instanceof Error ? err.message : String(err)})`;
  }
  if (k.kty === 'RSA') {
    const n = Buffer.from(String(k.n), 'base64url');
    if (n.length === 0 || (n[n.length - 1]! & 1) === 0) return 'has an even RSA modulus "n" (not a valid RSA public key)';
    const e = Buffer.from(String(k.e), 'base64url');
    if (e.length === 0 || (e[e.length - 1]! & 1) === 0) return 'has an even RSA exponent "e" (not a valid RSA public key)';
  }
  return undefined;
}

/**
 * istiod warns of inline keys with private material (an RSA, EC or OKP key with its private
 * exponent `d`, or a symmetric `oct` key): only public keys verify tokens, and the secret is now in
 * the config for everyone who can read it. Called on a JWKS checkJwks accepted.
 */
function warnPrivateJwks(issues: Issues, path: string, jwks: string): void {
  const doc = JSON.parse(jwks) as Record<string, unknown>;
  const keys = ('keys' in doc ? doc.keys : [doc]) as Record<string, unknown>[];
  keys.forEach((key, i) => {
    if (key.kty === 'oct' || key.d !== undefined) {
      issues.warn(path, `jwks key at index ${i} contains private key material; only public keys are used for verification`);
    }
  });
}
