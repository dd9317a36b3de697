/**
 * Where a JWT_RULE's verification keys come from: inline JWKS, a file:// JWKS (re-read when the
 * file changes), an https:// JWKS (cached; re-fetched when a token names an unknown key, at most
 * once per cooldown, as go-oidc's remote key set and jose do), or, with neither, OIDC discovery
 * from `<issuer>/.well-known/openid-configuration` (istiod's default when jwks_uri is empty).
 * https uses Node's trust store (NODE_EXTRA_CA_CERTS applies) plus `caCerts` when given.
 */
import { stat, readFile } from 'node:fs/promises';
import { request } from 'node:https';
import { fileURLToPath } from 'node:url';
import { createLocalJWKSet, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';
import { MeshError } from '../../util/errors.js';
import type { JwtRule } from './jwt-rule.js';

export interface JwksOptions {
  /** Extra CA certificates (PEM) trusted for https JWKS / discovery. */
  readonly caCerts?: string;
  readonly timeoutMs?: number;
  /** How long a fetched https JWKS is used before it is fetched again (default 10 min). */
  readonly cacheMaxAgeMs?: number;
  /** Least time between two fetches triggered by unknown keys (default 30 s). */
  readonly cooldownMs?: number;
}

const MAX_BODY_BYTES = 1 << 20;

/** GET an https URL as JSON; no redirects, bounded size and time. */
export function fetchJson(url: string, opts: JwksOptions): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'GET',
        headers: { accept: 'application/json' },
        ...(opts.caCerts ? { ca: opts.caCerts } : {}),
        timeout: opts.timeoutMs ?? 5000,
      },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          reject(new MeshError('UNAVAILABLE', `GET ${url}: HTTP ${res.statusCode ?? '?'}`));
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > MAX_BODY_BYTES) req.destroy(new MeshError('UNAVAILABLE', `GET ${url}: body over ${MAX_BODY_BYTES} bytes`));
          else chunks.push(c);
        });
        res.on('end', () => {
          try {
            resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
          } catch (err) {
            reject(new MeshError('UNAVAILABLE', `GET ${url}: not JSON (${(err as Error).message})`));
          }
        });
      },
    );
    req.on('timeout', () => req.destroy(new MeshError('UNAVAILABLE', `GET ${url}: timed out`)));
    req.on('error', (err) =>
      reject(err instanceof MeshError ? err : new MeshError('UNAVAILABLE', `GET ${url}: ${err.message}`, { cause: err })),
    );
    req.end();
  });
}

function asJwks(value: unknown, where: string): JSONWebKeySet {
  if (typeof value !== 'object' || value === null || !Array.isArray((value as { keys?: unknown }).keys)) {
    throw new MeshError('UNAVAILABLE', `${where}: not a JWKS (no "keys" list)`);
  }
  return value as JSONWebKeySet;
}

type Resolver = ReturnType<typeof createLocalJWKSet>;

/** A jose key resolver for the rule's keys. */
export function jwksKeyResolver(rule: JwtRule, opts: JwksOptions = {}): JWTVerifyGetKey {
  if (rule.jwks !== undefined) {
    const local = createLocalJWKSet(asJwks(JSON.parse(rule.jwks), 'JWT_RULE jwks'));
    return (header, token) => local(header, token);
  }
  if (rule.jwksUri?.startsWith('file://')) return fileResolver(fileURLToPath(rule.jwksUri));
  return remoteResolver(rule, opts);
}

function fileResolver(file: string): JWTVerifyGetKey {
  let cached: { mtimeMs: number; size: number; resolver: Resolver } | undefined;
  return async (header, token) => {
    const s = await stat(file);
    if (!cached || cached.mtimeMs !== s.mtimeMs || cached.size !== s.size) {
      const resolver = createLocalJWKSet(asJwks(JSON.parse(await readFile(file, 'utf8')), file));
      cached = { mtimeMs: s.mtimeMs, size: s.size, resolver };
    }
    return cached.resolver(header, token);
  };
}

function remoteResolver(rule: JwtRule, opts: JwksOptions): JWTVerifyGetKey {
  const maxAge = opts.cacheMaxAgeMs ?? 600_000;
  const cooldown = opts.cooldownMs ?? 30_000;
  let uri = rule.jwksUri;
  let cached: { at: number; resolver: Resolver } | undefined;
  let inflight: Promise<Resolver> | undefined;
  const load = (): Promise<Resolver> => {
    inflight ??= (async () => {
      if (uri === undefined) {
        const discovery = `${rule.issuer.replace(/\/$/, '')}/.well-known/openid-configuration`;
        const doc = (await fetchJson(discovery, opts)) as { jwks_uri?: unknown };
        if (typeof doc.jwks_uri !== 'string' || !doc.jwks_uri.startsWith('https://'))
          throw new MeshError('UNAVAILABLE', `${discovery}: no https jwks_uri`);
        uri = doc.jwks_uri;
      }
      const resolver = createLocalJWKSet(asJwks(await fetchJson(uri, opts), uri));
      cached = { at: Date.now(), resolver };
      return resolver;
    })().finally(() => {
      inflight = undefined;
    });
    return inflight;
  };
  return async (header, token) => {
    const fresh = cached && Date.now() - cached.at < maxAge ? cached : undefined;
    const resolver = fresh?.resolver ?? (await load());
    try {
      return await resolver(header, token);
    } catch (err) {
      // A key we have not seen: the issuer may have rotated; fetch again unless we just did.
      if ((err as { code?: string }).code !== 'ERR_JWKS_NO_MATCHING_KEY' || !cached || Date.now() - cached.at < cooldown) throw err;
      return (await load())(header, token);
    }
  };
}
