/**
 * `meshctl x preview`: what a proposed config change would do to each connected proxy. The change
 * is parsed and validated as the config sources do, laid over the current config, and pushed
 * nowhere: a throwaway PushContext (private cache) generates each proxy's watched types, which are
 * compared resource by resource with what the current push generates — added, removed, or changed
 * with the JSON paths that differ. The running server's state is not touched.
 */
import type { JsonValue } from '@bufbuild/protobuf';
import {
  configKeyString,
  formatConfigError,
  type Config,
  type KindName,
  atFieldLines,
  parseConfigFile,
  type ConfigSnapshot,
  validateObject,
} from '../../config/index.js';
import { type PushContext, pushRequest, anyBytesToJson, xdsJsonRegistry } from '../../model/index.js';
import type { Connection } from '../connection.js';
import type { GeneratorRegistry } from '../generator.js';
import type { XdsResource } from '../resource.js';
import { shortType } from '../type-urls.js';

export interface FieldChange {
  readonly path: string;
  readonly before?: JsonValue;
  readonly after?: JsonValue;
}

export interface ResourceChange {
  readonly type: string;
  readonly name: string;
  readonly change: 'added' | 'removed' | 'changed';
  /** For `changed`: the differing JSON paths (at most MAX_FIELDS). */
  readonly fields?: readonly FieldChange[];
}

export interface ProxyPreview {
  readonly proxy: string;
  readonly changes: readonly ResourceChange[];
}

export interface PreviewResult {
  /** The objects of the change (`Kind/ns/name`). */
  readonly configs: readonly string[];
  /** Proxies whose config would change. */
  readonly changed: readonly ProxyPreview[];
  /** Proxies the change does not touch. */
  readonly unchanged: readonly string[];
}

export interface PreviewDeps {
  readonly snapshot: ConfigSnapshot;
  readonly current: PushContext;
  /** A PushContext over another config with the server's mesh config and registries, never published. */
  previewPush(config: ConfigSnapshot): PushContext;
  readonly connections: readonly Connection[];
  readonly generators: GeneratorRegistry;
}

const MAX_FIELDS = 50;

/** The change's objects, validated (every error, with file:line, when any is invalid). */
export function parseChange(text: string, file: string): { configs: Config[] } | { errors: string[] } {
  const parsed = parseConfigFile(text, file);
  if (!parsed.ok) return { errors: parsed.errors.map(formatConfigError) };
  const errors = parsed.value.errors.map(formatConfigError);
  const configs: Config[] = [];
  for (const d of parsed.value.documents) {
    const r = validateObject(d.object, d.origin);
    if (r.ok) configs.push(r.value);
    else errors.push(...atFieldLines(r.errors, d).map(formatConfigError));
  }
  if (errors.length === 0 && configs.length === 0) errors.push(`${file}: no Istio objects in the change`);
  return errors.length > 0 ? { errors } : { configs };
}

/** `base` with `upserts` laid over it (same keys as the store: `namespace/name` per kind). */
export function overlaySnapshot(base: ConfigSnapshot, upserts: readonly Config[]): ConfigSnapshot {
  const kinds = new Map<KindName, Map<string, Config>>();
  for (const c of upserts) {
    let map = kinds.get(c.meta.kind);
    if (!map) kinds.set(c.meta.kind, (map = new Map(base.byKind(c.meta.kind))));
    map.set(`${c.meta.namespace}/${c.meta.name}`, c);
  }
  const byKind = <K extends KindName>(kind: K): ReadonlyMap<string, Config<K>> =>
    (kinds.get(kind) ?? base.byKind(kind)) as ReadonlyMap<string, Config<K>>;
  return {
    byKind,
    get: (kind, namespace, name) => byKind(kind).get(`${namespace}/${name}`),
    list: (kind, namespace) =>
      kinds.has(kind)
        ? [...byKind(kind).entries()]
            .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
            .map(([, c]) => c)
            .filter((c) => namespace === undefined || c.meta.namespace === namespace)
        : base.list(kind, namespace),
  };
}

export function previewChange(configs: readonly Config[], deps: PreviewDeps): PreviewResult {
  const preview = deps.previewPush(overlaySnapshot(deps.snapshot, configs));
  const req = pushRequest({ full: true, reason: 'debug', start: 0 });
  const changed: ProxyPreview[] = [];
  const unchanged: string[] = [];
  for (const conn of deps.connections) {
    const changes: ResourceChange[] = [];
    for (const w of conn.watchedTypes()) {
      const gen = deps.generators.lookup(conn.proxy, w.typeUrl);
      if (!gen) continue;
      const before = gen.generate(conn.proxy, w, deps.current, req);
      const after = gen.generate(conn.proxy, w, preview, req);
      changes.push(...diffResources(shortType(w.typeUrl), before, after));
    }
    if (changes.length > 0) changed.push({ proxy: conn.proxy.id, changes });
    else unchanged.push(conn.proxy.id);
  }
  return { configs: configs.map((c) => configKeyString(c.meta)), changed, unchanged: unchanged.sort() };
}

function diffResources(type: string, before: readonly XdsResource[], after: readonly XdsResource[]): ResourceChange[] {
  const old = new Map(before.map((r) => [r.name, r]));
  const out: ResourceChange[] = [];
  for (const r of after) {
    const o = old.get(r.name);
    old.delete(r.name);
    if (!o) out.push({ type, name: r.name, change: 'added' });
    else if (o.version !== r.version) out.push({ type, name: r.name, change: 'changed', fields: jsonDiff(toJson(o), toJson(r)) });
  }
  for (const name of old.keys()) out.push({ type, name, change: 'removed' });
  return out;
}

function toJson(r: XdsResource): JsonValue {
  return anyBytesToJson(xdsJsonRegistry(), r.any);
}

/** The leaf paths where two JSON values differ (`a.b[2].c`), at most MAX_FIELDS. */
export function jsonDiff(a: JsonValue, b: JsonValue): FieldChange[] {
  const out: FieldChange[] = [];
  const walk = (x: JsonValue | undefined, y: JsonValue | undefined, path: string): void => {
    if (out.length >= MAX_FIELDS) return;
    if (isObject(x) && isObject(y)) {
      for (const k of [...new Set([...Object.keys(x), ...Object.keys(y)])].sort()) walk(x[k], y[k], path === '' ? k : `${path}.${k}`);
    } else if (Array.isArray(x) && Array.isArray(y)) {
      for (let i = 0; i < Math.max(x.length, y.length); i++) walk(x[i], y[i], `${path}[${i}]`);
    } else if (JSON.stringify(x) !== JSON.stringify(y)) {
      out.push({ path, ...(x !== undefined ? { before: x } : {}), ...(y !== undefined ? { after: y } : {}) });
    }
  };
  walk(a, b, '');
  return out;
}

const isObject = (v: JsonValue | undefined): v is { [k: string]: JsonValue } => typeof v === 'object' && v !== null && !Array.isArray(v);
