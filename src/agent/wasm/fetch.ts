/**
 * Fetches a Wasm module the way istio-agent does (pkg/wasm): `http(s)://` over HTTP GET (HTTPS
 * verified against the configured roots, else the system's), `file://` from disk, and `oci://`
 * (or a bare image reference) through the OCI distribution API v2 — the manifest, then the layer
 * that holds the module: a Wasm artifact layer as it is, or `plugin.wasm` inside a (gzipped) tar
 * layer of a Docker/OCI image. Anonymous or pull-secret (basic) credentials, through the registry's
 * bearer-token challenge when it asks for one.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import { gunzipSync } from 'node:zlib';

export interface FetchOptions {
  /** PEM roots for HTTPS (module servers and registries); default: Node's bundled roots. */
  readonly caPem?: string;
  readonly timeoutMs: number;
  /** Registries (host[:port]) reached over plain HTTP instead of HTTPS (istio: WASM_INSECURE_REGISTRIES). */
  readonly insecureRegistries?: readonly string[];
  /** A docker config JSON (`{"auths": {host: {auth | username/password}}}`) from the plugin's pull secret. */
  readonly pullSecret?: string;
}

/** The module bytes, and for OCI the manifest digest (what a WasmPlugin's sha256 names for images). */
export interface Fetched {
  readonly bytes: Buffer;
  readonly imageDigest?: string;
}

const MAX_BYTES = 256 * 1024 * 1024;
const WASM_LAYER = 'application/vnd.module.wasm.content.layer.v1+wasm';
const MANIFEST_TYPES = ['application/vnd.oci.image.manifest.v1+json', 'application/vnd.docker.distribution.manifest.v2+json'];

export const sha256Hex = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

interface Response {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: Buffer;
}

function get(url: URL, o: FetchOptions, headers: Record<string, string> = {}): Promise<Response> {
  return new Promise((resolve, reject) => {
    const mod = url.protocol === 'https:' ? https : http;
    const req = mod.get(url, { headers, timeout: o.timeoutMs, ...(url.protocol === 'https:' && o.caPem ? { ca: o.caPem } : {}) }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_BYTES) req.destroy(new Error(`response from ${url.host} exceeds ${MAX_BYTES} bytes`));
        else chunks.push(c);
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`timed out after ${o.timeoutMs} ms`)));
    req.on('error', reject);
  });
}

async function getOk(url: URL, o: FetchOptions, headers?: Record<string, string>): Promise<Response> {
  const r = await get(url, o, headers);
  if (r.status < 200 || r.status >= 300) throw new Error(`GET ${url.href}: HTTP ${r.status}`);
  return r;
}

/** `oci://host[:port]/repo[:tag|@digest]` (or without scheme) split into its parts. */
export function parseImageRef(ref: string): { host: string; repo: string; reference: string } {
  const s = ref.replace(/^oci:\/\//, '');
  const slash = s.indexOf('/');
  if (slash < 0) throw new Error(`image reference ${JSON.stringify(ref)} names no registry`);
  const host = s.slice(0, slash);
  let rest = s.slice(slash + 1);
  let reference = 'latest';
  const at = rest.indexOf('@');
  if (at >= 0) {
    reference = rest.slice(at + 1);
    rest = rest.slice(0, at);
  } else {
    const colon = rest.lastIndexOf(':');
    if (colon > rest.lastIndexOf('/')) {
      reference = rest.slice(colon + 1);
      rest = rest.slice(0, colon);
    }
  }
  if (rest === '') throw new Error(`image reference ${JSON.stringify(ref)} names no repository`);
  return { host, repo: rest, reference };
}

function basicAuth(pullSecret: string | undefined, host: string): string | undefined {
  if (!pullSecret) return undefined;
  try {
    const cfg = JSON.parse(pullSecret) as { auths?: Record<string, { auth?: string; username?: string; password?: string }> };
    const a = cfg.auths?.[host] ?? cfg.auths?.[`https://${host}`];
    if (!a) return undefined;
    return a.auth ?? Buffer.from(`${a.username ?? ''}:${a.password ?? ''}`).toString('base64');
  } catch {
    throw new Error('image pull secret is not a docker config JSON');
  }
}

/** The first regular file named `plugin.wasm` (any directory) in a tar archive. */
function fromTar(tar: Buffer): Buffer | undefined {
  for (let off = 0; off + 512 <= tar.length;) {
    const name = tar
      .subarray(off, off + 100)
      .toString('utf8')
      .replace(/\0.*$/s, '');
    if (name === '') return undefined;
    const size = parseInt(
      tar
        .subarray(off + 124, off + 136)
        .toString('utf8')
        .replace(/\0.*$/s, '')
        .trim() || '0',
      8,
    );
    const type = String.fromCharCode(tar[off + 156] ?? 0);
    const data = off + 512;
    if ((type === '0' || type === '\0') && (name === 'plugin.wasm' || name.endsWith('/plugin.wasm')))
      return tar.subarray(data, data + size);
    off = data + Math.ceil(size / 512) * 512;
  }
  return undefined;
}

/** `Bearer realm="…",service="…",scope="…"` → its parameters. */
function challenge(header: string | undefined): Record<string, string> | undefined {
  if (!header || !/^bearer\s/i.test(header)) return undefined;
  const out: Record<string, string> = {};
  for (const m of header.slice(7).matchAll(/([a-zA-Z]+)="([^"]*)"/g)) out[(m[1] ?? '').toLowerCase()] = m[2] ?? '';
  return out;
}

/**
 * A registry request with the distribution spec's token flow: on 401 with a Bearer challenge, a
 * token from the realm (anonymous, or with the pull secret's basic credentials), then the request
 * again. The token is kept in `auth` for the following requests of the same pull.
 */
async function registryGet(
  url: URL,
  o: FetchOptions,
  auth: Record<string, string>,
  basic: string | undefined,
  repo: string,
  headers: Record<string, string> = {},
): Promise<Response> {
  const first = await get(url, o, { ...headers, ...auth });
  const c = first.status === 401 ? challenge(first.headers['www-authenticate']) : undefined;
  if (!c?.realm) {
    if (first.status < 200 || first.status >= 300) throw new Error(`GET ${url.href}: HTTP ${first.status}`);
    return first;
  }
  const tokenUrl = new URL(c.realm);
  if (c.service) tokenUrl.searchParams.set('service', c.service);
  tokenUrl.searchParams.set('scope', c.scope ?? `repository:${repo}:pull`);
  const tokenRes = await getOk(tokenUrl, o, basic ? { authorization: `Basic ${basic}` } : {});
  const body = JSON.parse(tokenRes.body.toString('utf8')) as { token?: string; access_token?: string };
  const token = body.token ?? body.access_token;
  if (!token) throw new Error(`registry token endpoint ${tokenUrl.origin} returned no token`);
  auth.authorization = `Bearer ${token}`;
  return getOk(url, o, { ...headers, ...auth });
}

async function fetchOci(ref: string, o: FetchOptions): Promise<Fetched> {
  const { host, repo, reference } = parseImageRef(ref);
  const scheme = o.insecureRegistries?.includes(host) ? 'http' : 'https';
  const base = `${scheme}://${host}/v2/${repo}`;
  const basic = basicAuth(o.pullSecret, host);
  const auth: Record<string, string> = basic ? { authorization: `Basic ${basic}` } : {};
  const manifestRes = await registryGet(new URL(`${base}/manifests/${reference}`), o, auth, basic, repo, {
    accept: MANIFEST_TYPES.join(', '),
  });
  const imageDigest = `sha256:${sha256Hex(manifestRes.body)}`;
  const manifest = JSON.parse(manifestRes.body.toString('utf8')) as { layers?: { mediaType?: string; digest?: string }[] };
  const layers = manifest.layers ?? [];
  const wasmLayer = layers.find((l) => l.mediaType === WASM_LAYER);
  const layer = wasmLayer ?? (layers.length === 1 ? layers[0] : undefined);
  if (!layer?.digest) throw new Error(`image ${ref}: no Wasm layer (expected a ${WASM_LAYER} layer or a single-layer image)`);
  const blob = (await registryGet(new URL(`${base}/blobs/${layer.digest}`), o, auth, basic, repo)).body;
  if (`sha256:${sha256Hex(blob)}` !== layer.digest) throw new Error(`image ${ref}: layer ${layer.digest} does not match its content`);
  if (wasmLayer) return { bytes: blob, imageDigest };
  const tar = blob[0] === 0x1f && blob[1] === 0x8b ? gunzipSync(blob) : blob;
  const wasm = fromTar(tar);
  if (!wasm) throw new Error(`image ${ref}: no plugin.wasm in its layer`);
  return { bytes: Buffer.from(wasm), imageDigest };
}

/** Fetches the module at `url` (no checksum check here: the cache does it). */
export async function fetchWasmModule(url: string, o: FetchOptions): Promise<Fetched> {
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(url)?.[1]?.toLowerCase() ?? 'oci';
  switch (scheme) {
    case 'http':
    case 'https':
      return { bytes: (await getOk(new URL(url), o)).body };
    case 'file':
      return { bytes: await readFile(new URL(url)) };
    case 'oci':
      return fetchOci(url, o);
    default:
      throw new Error(`unsupported Wasm module URL scheme ${JSON.stringify(scheme)}`);
  }
}
