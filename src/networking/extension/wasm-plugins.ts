/**
 * WasmPlugins as istiod serves them: each plugin that applies to a listener becomes an HTTP filter
 * whose config comes over ECDS (`config_discovery` on ADS, Wasm or RBAC types — the agent swaps in
 * RBAC when a module cannot be loaded), grouped by phase and ordered by priority (highest first).
 *
 * Names follow the istiod we compare with (istio master after 1.30): a WasmPlugin is translated to
 * a synthetic TrafficExtension named `<name>~istio-translated-wasmplugin`, and the ECDS resource
 * and filter are `extensions.istio.io/trafficextension/<namespace>.<that name>`.
 */
import { create, type JsonValue } from '@bufbuild/protobuf';
import { AnySchema, StringValueSchema } from '@bufbuild/protobuf/wkt';
import { type Config, inCreationOrder, wasmUrlScheme } from '../../config/index.js';
import type { AsyncDataSourceSchema } from '../../gen/envoy/config/core/v3/base_pb.js';
import { ApiVersion } from '../../gen/envoy/config/core/v3/config_source_pb.js';
import { type TypedExtensionConfig, TypedExtensionConfigSchema } from '../../gen/envoy/config/core/v3/extension_pb.js';
import { WasmSchema } from '../../gen/envoy/extensions/filters/http/wasm/v3/wasm_pb.js';
import { FailurePolicy, type VmConfigSchema } from '../../gen/envoy/extensions/wasm/v3/wasm_pb.js';
import {
  EnvValueSource,
  FailStrategy,
  PluginPhase,
  PluginType,
  PullPolicy,
  type WasmPlugin,
} from '../../gen/extensions/v1alpha1/wasm_pb.js';
import { WorkloadMode } from '../../gen/type/v1beta1/selector_pb.js';
import { shouldAttach, type Proxy, type PushContext } from '../../model/index.js';
import { durationFromMs, packAny, type Init } from '../common.js';
import type { HttpFilterInit } from '../listener/hcm.js';

export const WASM_RESOURCE_PREFIX = 'extensions.istio.io/trafficextension/';
const TRANSLATED_SUFFIX = '~istio-translated-wasmplugin';
const TYPE_PREFIX = 'type.googleapis.com/';
export const WASM_HTTP_FILTER_TYPE = `${TYPE_PREFIX}envoy.extensions.filters.http.wasm.v3.Wasm`;
export const RBAC_HTTP_FILTER_TYPE = `${TYPE_PREFIX}envoy.extensions.filters.http.rbac.v3.RBAC`;
/** VM env keys istiod sets for the agent (which strips `ISTIO_META_*` before Envoy sees them). */
export const WASM_ENV = {
  pullSecret: 'ISTIO_META_WASM_IMAGE_PULL_SECRET',
  pullPolicy: 'ISTIO_META_WASM_IMAGE_PULL_POLICY',
  resourceVersion: 'ISTIO_META_WASM_PLUGIN_RESOURCE_VERSION',
} as const;

export type WasmPhase = 'AUTHN' | 'AUTHZ' | 'STATS' | 'UNSPECIFIED';
/** istiod's ListenerClass: which side of the proxy an HCM serves. */
export type ListenerClass = 'SIDECAR_INBOUND' | 'SIDECAR_OUTBOUND' | 'GATEWAY';

/** Where an HCM sits, as WasmPlugin `match` sees it: its listener's port (inbound: the target port; catch-alls: 0). */
export interface ListenerInfo {
  readonly port: number;
  readonly cls: ListenerClass;
}

/** The HTTP-phase filters of one HCM: wasm filters to insert around istiod's authn/authz filters. */
export type PhasedFilters = (phase: WasmPhase) => readonly HttpFilterInit[];

const PHASE: Record<PluginPhase, WasmPhase> = {
  [PluginPhase.UNSPECIFIED_PHASE]: 'UNSPECIFIED',
  [PluginPhase.AUTHN]: 'AUTHN',
  [PluginPhase.AUTHZ]: 'AUTHZ',
  [PluginPhase.STATS]: 'STATS',
};

/** `<namespace>.<name>` of the synthetic TrafficExtension; also the Wasm PluginConfig's name. */
const pluginKey = (c: Config<'WasmPlugin'>): string => `${c.meta.namespace}.${c.meta.name}${TRANSLATED_SUFFIX}`;
export const wasmResourceName = (c: Config<'WasmPlugin'>): string => WASM_RESOURCE_PREFIX + pluginKey(c);

const isHttp = (s: WasmPlugin): boolean => s.type === PluginType.HTTP || s.type === PluginType.UNSPECIFIED_PLUGIN_TYPE;

function modeOf(cls: ListenerClass): WorkloadMode {
  return cls === 'SIDECAR_INBOUND' ? WorkloadMode.SERVER : WorkloadMode.CLIENT;
}

/** istiod's matchTrafficExtensionSelectors: any selector whose mode and ports fit the listener. */
function matchesListener(s: WasmPlugin, li: ListenerInfo | undefined): boolean {
  if (li === undefined || s.match.length === 0) return true;
  return s.match.some(
    (m) =>
      (m.mode === WorkloadMode.UNDEFINED || m.mode === WorkloadMode.CLIENT_AND_SERVER || m.mode === modeOf(li.cls)) &&
      (m.ports.length === 0 || m.ports.some((p) => p.number !== 0 && p.number === li.port)),
  );
}

export interface WasmSource {
  /** WasmPlugins of a namespace, in any order (the users put them in creation order). */
  list(namespace: string): readonly Config<'WasmPlugin'>[];
  readonly rootNamespace: string;
}

/** The HTTP WasmPlugins attached to `proxy` (own namespace, then root), for one listener or (undefined) any. */
export function wasmPluginsFor(src: WasmSource, proxy: Proxy, li: ListenerInfo | undefined): Map<WasmPhase, Config<'WasmPlugin'>[]> {
  const out = new Map<WasmPhase, Config<'WasmPlugin'>[]>();
  const namespaces = [...new Set([proxy.namespace, src.rootNamespace])];
  for (const ns of namespaces) {
    for (const c of inCreationOrder(src.list(ns))) {
      if (!isHttp(c.spec) || !shouldAttach(ns, c.spec, proxy.namespace, proxy.labels) || !matchesListener(c.spec, li)) continue;
      const phase = PHASE[c.spec.phase];
      const list = out.get(phase) ?? [];
      list.push(c);
      out.set(phase, list);
    }
  }
  // Stable, as istiod's sortByPriority: equal priorities keep namespace, then creation order; no priority sorts last.
  const prio = (c: Config<'WasmPlugin'>): number => c.spec.priority ?? -(2 ** 31);
  for (const list of out.values()) list.sort((a, b) => prio(b) - prio(a));
  return out;
}

/** The HCM filter that loads a plugin's config over ECDS (no initial fetch timeout: authn/authz may depend on it). */
function discoveredFilter(c: Config<'WasmPlugin'>): HttpFilterInit {
  return {
    name: wasmResourceName(c),
    configType: {
      case: 'configDiscovery',
      value: {
        configSource: {
          configSourceSpecifier: { case: 'ads', value: {} },
          resourceApiVersion: ApiVersion.V3,
          initialFetchTimeout: durationFromMs(0),
        },
        typeUrls: [WASM_HTTP_FILTER_TYPE, RBAC_HTTP_FILTER_TYPE],
      },
    },
  };
}

/** The phased HCM filters for one listener of `proxy`. */
export function wasmHttpFilters(src: WasmSource, proxy: Proxy, li: ListenerInfo): PhasedFilters {
  const byPhase = wasmPluginsFor(src, proxy, li);
  return (phase) => (byPhase.get(phase) ?? []).map(discoveredFilter);
}

/** JSON as Go's jsonpb writes a Struct: compact, keys sorted. */
function canonicalJson(v: JsonValue): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  return `{${Object.keys(v)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonicalJson(v[k] as JsonValue)}`)
    .join(',')}}`;
}

const PULL_POLICY: Partial<Record<PullPolicy, string>> = { [PullPolicy.IfNotPresent]: 'IfNotPresent', [PullPolicy.Always]: 'Always' };
const FAILURE: Record<FailStrategy, FailurePolicy> = {
  [FailStrategy.FAIL_CLOSE]: FailurePolicy.FAIL_CLOSED,
  [FailStrategy.FAIL_OPEN]: FailurePolicy.FAIL_OPEN,
  [FailStrategy.FAIL_RELOAD]: FailurePolicy.FAIL_RELOAD,
};

/** The module's location: `file://` stays local; anything else is a remote the agent fetches (cluster `_` is never used). */
function codeSource(url: string, sha256: string): Init<typeof AsyncDataSourceSchema> {
  const scheme = wasmUrlScheme(url);
  if (scheme === 'file')
    return { specifier: { case: 'local', value: { specifier: { case: 'filename', value: url.slice('file://'.length) } } } };
  const uri = scheme === '' ? `oci://${url}` : url;
  return {
    specifier: {
      case: 'remote',
      value: { httpUri: { uri, timeout: durationFromMs(30_000), httpUpstreamType: { case: 'cluster', value: '_' } }, sha256 },
    },
  };
}

/** The Wasm HTTP filter config istiod sends for a WasmPlugin (pull secret not resolved: no secret access here). */
export function wasmExtensionConfig(c: Config<'WasmPlugin'>): TypedExtensionConfig {
  const s = c.spec;
  const keyValues: Record<string, string> = {};
  if (s.imagePullSecret !== '') keyValues[WASM_ENV.pullSecret] = '';
  const policy = PULL_POLICY[s.imagePullPolicy];
  if (policy) keyValues[WASM_ENV.pullPolicy] = policy;
  keyValues[WASM_ENV.resourceVersion] = c.meta.resourceVersion;
  const hostEnvKeys: string[] = [];
  for (const e of s.vmConfig?.env ?? []) {
    if (e.valueFrom === EnvValueSource.INLINE) keyValues[e.name] = e.value;
    else hostEnvKeys.push(e.name);
  }
  const vmConfig: Init<typeof VmConfigSchema> = {
    runtime: 'envoy.wasm.runtime.v8',
    code: codeSource(s.url, s.sha256),
    environmentVariables: { keyValues, hostEnvKeys },
  };
  // istiod sends an empty Any when there is no plugin config, else the config as JSON in a StringValue.
  const configuration =
    s.pluginConfig && Object.keys(s.pluginConfig).length > 0
      ? packAny(StringValueSchema, { value: canonicalJson(s.pluginConfig) })
      : create(AnySchema);
  return create(TypedExtensionConfigSchema, {
    name: wasmResourceName(c),
    typedConfig: packAny(WasmSchema, {
      config: {
        name: pluginKey(c),
        rootId: s.pluginName,
        configuration,
        vm: { case: 'vmConfig', value: vmConfig },
        failurePolicy: FAILURE[s.failStrategy],
      },
    }),
  });
}

/** ECDS: the configs of the requested names among the plugins attached to `proxy` (istiod: own and root namespace only). */
export function wasmExtensionConfigs(src: WasmSource, proxy: Proxy, names: readonly string[]): TypedExtensionConfig[] {
  const wanted = new Set(names);
  const out: TypedExtensionConfig[] = [];
  for (const ns of new Set([proxy.namespace, src.rootNamespace])) {
    for (const c of inCreationOrder(src.list(ns))) {
      if (wanted.has(wasmResourceName(c)) && isHttp(c.spec)) out.push(wasmExtensionConfig(c));
    }
  }
  return out;
}

/** The WasmPlugins of a push (reads are recorded as dependencies of what is built from them). */
export function wasmSource(push: Pick<PushContext, 'config' | 'mesh'>): WasmSource {
  return { list: (ns) => push.config.list('WasmPlugin', ns), rootNamespace: push.mesh.rootNamespace };
}

/**
 * What a proxy's listeners depend on among WasmPlugins: the plugins attached to it (namespace,
 * selector, targetRefs). Proxies that share a listener cache key must also share this.
 */
export function wasmViewKey(push: Pick<PushContext, 'config' | 'mesh'>, proxy: Proxy): string {
  const byPhase = wasmPluginsFor(wasmSource(push), proxy, undefined);
  if (byPhase.size === 0) return '';
  return [...byPhase.values()]
    .flat()
    .map((c) => `${c.meta.namespace}/${c.meta.name}`)
    .sort()
    .join(',');
}
