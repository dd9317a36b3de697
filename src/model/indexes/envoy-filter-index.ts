import type { Registry } from '@bufbuild/protobuf';
import type { ConfigSnapshot } from '../../config/index.js';
import { compileEnvoyFilter, type ApplyTo, type CompiledEnvoyFilter, type CompiledPatch } from '../envoy-filter.js';
import type { Proxy } from '../proxy.js';
import { shouldAttach } from './security-index.js';

/** The patches that apply to one proxy, in application order, by applyTo (istiod's MergedEnvoyFilterWrapper). */
export interface ProxyPatches {
  /** The matched EnvoyFilter versions in order: equal keys mean equal patches (cache keys). */
  readonly key: string;
  /** `namespace/name` of the matched EnvoyFilters, in order. */
  readonly filters: readonly string[];
  readonly byApplyTo: ReadonlyMap<ApplyTo, readonly CompiledPatch[]>;
}

/**
 * istiod's EnvoyFilter order for one proxy: priority, then root-namespace filters before the
 * proxy's namespace, then creation time (metadata.creationTimestamp: API objects have one, files
 * usually not — istiod's file mode then sees the zero time for every one too), then `name.namespace`.
 */
export function compareEnvoyFilters(a: CompiledEnvoyFilter, b: CompiledEnvoyFilter, rootNamespace: string): number {
  if (a.priority !== b.priority) return a.priority - b.priority;
  if (a.namespace !== b.namespace && (a.namespace === rootNamespace || b.namespace === rootNamespace))
    return a.namespace === rootNamespace ? -1 : 1;
  if (a.created !== b.created) return a.created - b.created;
  const an = `${a.name}.${a.namespace}`;
  const bn = `${b.name}.${b.namespace}`;
  return an < bn ? -1 : an > bn ? 1 : 0;
}

/** istiod's proxyMatch: ISTIO_VERSION against the version regex, node metadata equal to the match's. */
function proxyMatches(proxy: Proxy, p: CompiledPatch): boolean {
  const m = p.match?.proxy;
  if (!m) return true;
  if (p.proxyVersion === 'never') return false;
  if (p.proxyVersion) {
    const v = proxy.metadata.istioVersion ?? '';
    if (v === '' || !p.proxyVersion.test(v)) return false;
  }
  return Object.entries(m.metadata).every(([k, v]) => proxy.metadata.raw[k] === v);
}

/**
 * EnvoyFilters by namespace, compiled once per object version (patch values decoded), for
 * selection per proxy. Rebuilt only when EnvoyFilters change (PushContext reuses it otherwise).
 */
export class EnvoyFilterIndex {
  private readonly byNamespace = new Map<string, CompiledEnvoyFilter[]>();
  /** Value decode failures, `namespace/name: path: reason` (logged by the push that builds the index). */
  readonly errors: readonly string[];
  private readonly selected = new WeakMap<Proxy, ProxyPatches | undefined>();

  private constructor(
    private readonly rootNamespace: string,
    filters: readonly CompiledEnvoyFilter[],
  ) {
    const errors: string[] = [];
    for (const f of filters) {
      const list = this.byNamespace.get(f.namespace);
      if (list) list.push(f);
      else this.byNamespace.set(f.namespace, [f]);
      for (const e of f.errors) errors.push(`${f.namespace}/${f.name}: ${e}`);
    }
    this.errors = errors;
  }

  /** Compiles every EnvoyFilter of the snapshot; an unchanged object reuses its compiled form from `previous`. */
  static build(config: ConfigSnapshot, rootNamespace: string, registry: Registry, previous?: EnvoyFilterIndex): EnvoyFilterIndex {
    const reuse = new Map<string, CompiledEnvoyFilter>();
    if (previous) for (const list of previous.byNamespace.values()) for (const f of list) reuse.set(f.version, f);
    const compiled = config
      .list('EnvoyFilter')
      .map(
        (c) =>
          reuse.get(`${c.meta.namespace}/${c.meta.name}@${c.meta.resourceVersion}`) ??
          compileEnvoyFilter(c, registry, c.meta.creationTimestamp),
      );
    return new EnvoyFilterIndex(rootNamespace, compiled);
  }

  get size(): number {
    let n = 0;
    for (const l of this.byNamespace.values()) n += l.length;
    return n;
  }

  /** The patches for a proxy (root namespace ones and its own namespace's), or undefined when none apply. */
  forProxy(proxy: Proxy): ProxyPatches | undefined {
    if (this.selected.has(proxy)) return this.selected.get(proxy);
    const attached = (ns: string): CompiledEnvoyFilter[] =>
      (this.byNamespace.get(ns) ?? []).filter((f) =>
        shouldAttach(
          f.namespace,
          { selector: f.selector ? { matchLabels: f.selector } : undefined, targetRefs: f.targetRefs },
          proxy.namespace,
          proxy.labels,
        ),
      );
    const matched = [...attached(this.rootNamespace), ...(proxy.namespace !== this.rootNamespace ? attached(proxy.namespace) : [])];
    matched.sort((a, b) => compareEnvoyFilters(a, b, this.rootNamespace));
    const byApplyTo = new Map<ApplyTo, CompiledPatch[]>();
    const keys: string[] = [];
    for (const f of matched) {
      // Which patches pass the proxy match is part of the key: two proxies selected by the same
      // filters but with a different ISTIO_VERSION may get different patches.
      const used: number[] = [];
      f.patches.forEach((p, i) => {
        if (!proxyMatches(proxy, p)) return;
        used.push(i);
        const list = byApplyTo.get(p.applyTo);
        if (list) list.push(p);
        else byApplyTo.set(p.applyTo, [p]);
      });
      if (used.length > 0) keys.push(`${f.version}#${used.join('.')}`);
    }
    const out = keys.length === 0 ? undefined : { key: keys.join(','), filters: matched.map((f) => `${f.namespace}/${f.name}`), byApplyTo };
    this.selected.set(proxy, out);
    return out;
  }
}
