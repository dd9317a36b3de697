/**
 * The agent's Wasm module cache: modules on disk under `dir`, keyed by URL + expected sha256 (a
 * second plugin, or a re-sent ECDS config, with the same pair reuses the file without fetching).
 * A module is kept only when it passed its checksum: the module's sha256 for http(s)/file, the
 * image manifest digest for OCI (as istio-agent; the module's own hash is accepted too).
 */
import { mkdir, rename, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fetchWasmModule, sha256Hex, type Fetched, type FetchOptions } from './fetch.js';

export interface WasmCacheOptions {
  readonly dir: string;
  readonly fetchOptions: Omit<FetchOptions, 'pullSecret'>;
  /** Replaces the network fetch (tests). */
  readonly fetch?: (url: string, o: FetchOptions) => Promise<Fetched>;
}

export interface WasmCache {
  /** The local file of the module at `url` (fetched unless cached); throws on fetch or checksum failure. */
  get(url: string, sha256: string, opts?: { readonly pullSecret?: string; readonly pullAlways?: boolean }): Promise<string>;
  /** Network fetches so far (cache misses). */
  fetches(): number;
}

export function wasmCache(o: WasmCacheOptions): WasmCache {
  const inFlight = new Map<string, Promise<string>>();
  const fetchModule = o.fetch ?? fetchWasmModule;
  let fetches = 0;

  const load = async (url: string, sha256: string, pullSecret: string | undefined, pullAlways: boolean): Promise<string> => {
    const file = path.join(o.dir, `${sha256Hex(Buffer.from(`${url}\n${sha256}`))}.wasm`);
    // A pinned module never changes; an unpinned one is pulled again only under the Always policy.
    if ((sha256 !== '' || !pullAlways) && (await stat(file).catch(() => undefined))?.isFile()) return file;
    fetches++;
    const got = await fetchModule(url, { ...o.fetchOptions, ...(pullSecret ? { pullSecret } : {}) });
    if (got.bytes.length === 0) throw new Error(`module at ${url} is empty`);
    if (sha256 !== '') {
      const actual = sha256Hex(got.bytes);
      const digest = got.imageDigest?.replace(/^sha256:/, '');
      if (actual !== sha256 && digest !== sha256)
        throw new Error(`module downloaded from ${url} has checksum ${digest ?? actual}, which does not match: ${sha256}`);
    }
    await mkdir(o.dir, { recursive: true });
    const tmp = `${file}.${process.pid}.tmp`;
    await writeFile(tmp, got.bytes, { mode: 0o644 });
    await rename(tmp, file);
    return file;
  };

  return {
    get(url, sha256, opts = {}) {
      const key = `${url}\n${sha256}`;
      let p = inFlight.get(key);
      if (!p) {
        p = load(url, sha256, opts.pullSecret, opts.pullAlways === true).finally(() => inFlight.delete(key));
        inFlight.set(key, p);
      }
      return p;
    },
    fetches: () => fetches,
  };
}
