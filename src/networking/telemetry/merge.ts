/**
 * istiod's merges of the Telemetry config in scope for a workload (pilot/pkg/model/telemetry.go):
 * metrics (providers inherit down the levels unless a level names its own; overrides apply in
 * order, per client/server mode and metric), access logging (per level; a lower level's providers
 * replace the upper's), tracing (client and server specs, later entries override fields).
 */
import type { Duration } from '@bufbuild/protobuf/wkt';
import {
  MetricSelector_IstioMetric,
  MetricsOverrides_TagOverride_Operation,
  WorkloadMode,
  type AccessLogging,
  type AccessLogging_Filter,
  type MetricSelector,
  type Metrics,
  type MetricsOverrides_TagOverride,
  type ProviderRef,
  type Tracing,
  type Tracing_CustomTag,
} from '../../gen/telemetry/v1alpha1/telemetry_pb.js';
import type { DefaultProviders, ExtensionProvider, MeshTelemetry } from '../../config/index.js';

/** istiod's listener classes: what a listener is for decides client (outbound, gateway) or server (inbound) mode. */
export type ListenerClass = 'inbound' | 'outbound' | 'gateway';

export const modeOf = (c: ListenerClass): WorkloadMode.CLIENT | WorkloadMode.SERVER =>
  c === 'inbound' ? WorkloadMode.SERVER : WorkloadMode.CLIENT;

const names = (ps: readonly ProviderRef[]): string[] => ps.map((p) => p.name);

/** istiod's fetchProvider: the mesh's extension provider of that name (case-insensitive). */
export function findProvider(mesh: MeshTelemetry, name: string): ExtensionProvider | undefined {
  const lower = name.toLowerCase();
  return mesh.extensionProviders.find((p) => p.name.toLowerCase() === lower);
}

// ---- metrics ----

export interface TagOverride {
  readonly name: string;
  readonly remove: boolean;
  readonly value: string;
}
export interface MetricOverride {
  readonly name: string;
  readonly disabled: boolean;
  readonly tags: readonly TagOverride[];
}
export interface ModeMetrics {
  /** Every metric disabled: no filter on this side. */
  readonly disabled: boolean;
  readonly overrides: readonly MetricOverride[];
}
export interface ProviderMetrics {
  readonly client: ModeMetrics;
  readonly server: ModeMetrics;
  readonly reportingInterval?: Duration;
}

/** Every Istio metric but ALL_METRICS, sorted (what ALL_METRICS or no match expands to). */
const ALL_METRICS = Object.keys(MetricSelector_IstioMetric)
  .filter((k) => Number.isNaN(Number(k)) && k !== 'ALL_METRICS')
  .sort();

function isAllMetrics(m: MetricSelector | undefined): boolean {
  const mm = m?.metricMatch;
  if (mm?.case === 'customMetric') return false;
  if (mm?.case === 'metric') return mm.value === MetricSelector_IstioMetric.ALL_METRICS;
  return true;
}

function matchedMetrics(m: MetricSelector | undefined): string[] {
  const mm = m?.metricMatch;
  if (mm?.case === 'customMetric') return [mm.value];
  if (mm?.case === 'metric' && mm.value !== MetricSelector_IstioMetric.ALL_METRICS) return [MetricSelector_IstioMetric[mm.value]];
  return ALL_METRICS;
}

const modesOf = (mode: WorkloadMode | undefined): WorkloadMode[] =>
  mode === WorkloadMode.CLIENT || mode === WorkloadMode.SERVER ? [mode] : [WorkloadMode.CLIENT, WorkloadMode.SERVER];

interface OverrideAcc {
  disabled?: boolean;
  tags?: Map<string, MetricsOverrides_TagOverride>;
}

/** istiod's mergeMetrics: provider name → client/server metric config. */
export function mergeMetrics(metrics: readonly Metrics[], dp: DefaultProviders): Map<string, ProviderMetrics> {
  const providers = new Map<string, Map<WorkloadMode, Map<string, OverrideAcc>>>();
  if (metrics.length === 0) for (const p of dp.metrics) providers.set(p, new Map());
  let inScope = dp.metrics;
  for (const m of metrics) if (m.providers.length > 0) inScope = names(m.providers);
  const inScopeSet = new Set(inScope);
  let parent = dp.metrics;
  const disabledAll = new Set<string>();
  const intervals = new Map<string, Duration>();
  for (const m of metrics) {
    const ps = m.providers.length > 0 ? names(m.providers) : parent;
    parent = ps;
    for (const provider of ps) {
      if (!inScopeSet.has(provider)) continue;
      if (m.reportingInterval) intervals.set(provider, m.reportingInterval);
      let mp = providers.get(provider);
      if (!mp)
        providers.set(
          provider,
          (mp = new Map([
            [WorkloadMode.CLIENT, new Map()],
            [WorkloadMode.SERVER, new Map()],
          ])),
        );
      for (const o of m.overrides) {
        if (isAllMetrics(o.match) && o.disabled === true) {
          for (const mode of modesOf(o.match?.mode)) disabledAll.add(`${provider}/${mode}`);
          continue;
        }
        for (const mode of modesOf(o.match?.mode)) {
          disabledAll.delete(`${provider}/${mode}`);
          let byMetric = mp.get(mode);
          if (!byMetric) mp.set(mode, (byMetric = new Map()));
          for (const metric of matchedMetrics(o.match)) {
            const acc: OverrideAcc = { ...byMetric.get(metric) };
            if (o.disabled !== undefined) acc.disabled = o.disabled;
            for (const [k, v] of Object.entries(o.tagOverrides)) (acc.tags ??= new Map()).set(k, v);
            if (acc.tags) acc.tags = new Map(acc.tags);
            byMetric.set(metric, acc);
          }
        }
      }
    }
  }
  const out = new Map<string, ProviderMetrics>();
  for (const [provider, modeMap] of providers) {
    const side = (mode: WorkloadMode): ModeMetrics => {
      if (disabledAll.has(`${provider}/${mode}`) && modeMap.has(mode)) return { disabled: true, overrides: [] };
      const overrides = [...(modeMap.get(mode) ?? new Map<string, OverrideAcc>())].map(([name, acc]): MetricOverride => ({
        name,
        disabled: acc.disabled ?? false,
        tags: [...(acc.tags ?? new Map<string, MetricsOverrides_TagOverride>())]
          .map(([tag, v]) => ({
            name: tag,
            remove: v.operation === MetricsOverrides_TagOverride_Operation.REMOVE,
            value: v.operation === MetricsOverrides_TagOverride_Operation.REMOVE ? '' : v.value,
          }))
          .sort((a, b) => cmp(a.name, b.name)),
      }));
      return { disabled: false, overrides: overrides.sort((a, b) => cmp(a.name, b.name)) };
    };
    const interval = intervals.get(provider);
    out.set(provider, {
      client: side(WorkloadMode.CLIENT),
      server: side(WorkloadMode.SERVER),
      ...(interval ? { reportingInterval: interval } : {}),
    });
  }
  return out;
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

// ---- access logging ----

export interface LoggingSpec {
  readonly disabled: boolean;
  readonly filter?: AccessLogging_Filter;
}

const matchesMode = (l: AccessLogging, mode: WorkloadMode): boolean =>
  l.match === undefined || l.match.mode === WorkloadMode.CLIENT_AND_SERVER || l.match.mode === mode;

/** istiod's mergeLogs: provider name → enabled/disabled and its CEL filter, for one mode. */
export function mergeLogs(
  levels: readonly (readonly AccessLogging[])[],
  dp: DefaultProviders,
  mode: WorkloadMode,
): Map<string, LoggingSpec> {
  const out = new Map<string, LoggingSpec>();
  if (levels.length === 0) {
    for (const p of dp.accessLogging) out.set(p, { disabled: false });
    return out;
  }
  let inScope: readonly string[] = dp.accessLogging;
  const filters = new Map<string, LoggingSpec>();
  for (const level of levels) {
    const levelNames = new Set<string>();
    for (const l of level) {
      if (!matchesMode(l, mode)) continue;
      for (const p of names(l.providers)) {
        levelNames.add(p);
        filters.set(p, { disabled: false, ...(l.filter ? { filter: l.filter } : {}) });
      }
    }
    if (levelNames.size > 0) inScope = [...levelNames];
  }
  const inScopeSet = new Set(inScope);
  let parent: readonly string[] = dp.accessLogging;
  for (const level of levels) {
    for (const l of level) {
      const ps = l.providers.length > 0 ? names(l.providers) : parent;
      parent = ps;
      for (const p of ps) {
        if (!inScopeSet.has(p) || !matchesMode(l, mode)) continue;
        out.set(p, l.disabled === true ? { disabled: true } : (filters.get(p) ?? { disabled: false }));
      }
    }
  }
  return out;
}

// ---- tracing ----

export interface TracingSpec {
  readonly provider?: ExtensionProvider;
  readonly disabled: boolean;
  readonly randomSamplingPercentage?: number;
  readonly customTags: Readonly<Record<string, Tracing_CustomTag>>;
  readonly useRequestIdForTraceSampling: boolean;
  readonly enableIstioTags: boolean;
  readonly disableContextPropagation: boolean;
}

/** istiod's Telemetries.Tracing: undefined when neither a Telemetry nor a default provider configures tracing. */
export function mergeTracing(
  tracing: readonly Tracing[],
  mesh: MeshTelemetry,
): { readonly client: TracingSpec; readonly server: TracingSpec } | undefined {
  const defaults = mesh.defaultProviders.tracing;
  if (tracing.length === 0 && defaults.length === 0) return undefined;
  type Mutable = { -readonly [K in keyof TracingSpec]: TracingSpec[K] };
  const start = (): Mutable => ({
    disabled: false,
    customTags: {},
    useRequestIdForTraceSampling: true,
    enableIstioTags: true,
    disableContextPropagation: false,
  });
  const client = start();
  const server = start();
  if (defaults[0] !== undefined) {
    const p = findProvider(mesh, defaults[0]);
    if (p) client.provider = server.provider = p;
  }
  for (const t of tracing) {
    const specs = t.match?.mode === WorkloadMode.CLIENT ? [client] : t.match?.mode === WorkloadMode.SERVER ? [server] : [client, server];
    for (const s of specs) {
      if (t.providers[0] !== undefined) {
        const p = findProvider(mesh, t.providers[0].name);
        if (p) s.provider = p;
        else delete s.provider;
      }
      if (t.disableSpanReporting !== undefined) s.disabled = t.disableSpanReporting;
      if (Object.keys(t.customTags).length > 0) s.customTags = t.customTags;
      if (t.randomSamplingPercentage !== undefined) s.randomSamplingPercentage = t.randomSamplingPercentage;
      if (t.useRequestIdForTraceSampling !== undefined) s.useRequestIdForTraceSampling = t.useRequestIdForTraceSampling;
      if (t.enableIstioTags !== undefined) s.enableIstioTags = t.enableIstioTags;
      if (t.disableContextPropagation !== undefined) s.disableContextPropagation = t.disableContextPropagation;
    }
  }
  if (!client.provider) client.disabled = true;
  if (!server.provider) server.disabled = true;
  return { client, server };
}
