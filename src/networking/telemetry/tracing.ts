/**
 * HCM tracing as istiod configures it (pilot/pkg/networking/core/tracing.go): without Telemetry
 * tracing (and no default tracing provider) the legacy MeshConfig form — sampling only, Istio's
 * tags, no provider (the bootstrap's tracer, when there is one); with Telemetry, the client
 * (outbound, gateway) or server (inbound) spec's provider (zipkin, opentelemetry, skywalking,
 * datadog) with its cluster, random sampling, custom tags and the request-id sampling choice.
 */
import type { Any } from '@bufbuild/protobuf/wkt';
import { DatadogConfigSchema } from '../../gen/envoy/config/trace/v3/datadog_pb.js';
import { OpenTelemetryConfigSchema } from '../../gen/envoy/config/trace/v3/opentelemetry_pb.js';
import { SkyWalkingConfigSchema } from '../../gen/envoy/config/trace/v3/skywalking_pb.js';
import { ZipkinConfig_CollectorEndpointVersion, ZipkinConfigSchema } from '../../gen/envoy/config/trace/v3/zipkin_pb.js';
import type {
  HttpConnectionManager_TracingSchema,
  RequestIDExtensionSchema,
} from '../../gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js';
import { UuidRequestIdConfigSchema } from '../../gen/envoy/extensions/request_id/uuid/v3/uuid_pb.js';
import type { CustomTagSchema } from '../../gen/envoy/type/tracing/v3/custom_tag_pb.js';
import type { MeshConfig_ExtensionProvider_HttpHeader } from '../../gen/mesh/v1alpha1/config_pb.js';
import type { Tracing_CustomTag } from '../../gen/telemetry/v1alpha1/telemetry_pb.js';
import type { Proxy, PushContext } from '../../model/index.js';
import type { ExtensionProvider } from '../../config/index.js';
import { packAny, type Init } from '../common.js';
import { lookupProviderCluster } from './lookup.js';
import type { ListenerClass, TracingSpec } from './merge.js';
import { CANONICAL_NAME_LABEL, CANONICAL_REVISION_LABEL } from '../../config/constants.js';

export type HcmTracingInit = Init<typeof HttpConnectionManager_TracingSchema>;
export type RequestIdInit = Init<typeof RequestIDExtensionSchema>;
type CustomTagInit = Init<typeof CustomTagSchema>;

/** PILOT_TRACE_SAMPLING's default. */
const DEFAULT_SAMPLING = 1;

type JsonRecord = Readonly<Record<string, unknown>>;
const rec = (v: unknown): JsonRecord | undefined =>
  v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as JsonRecord) : undefined;
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** The tracing part of the proxy's ProxyConfig (node metadata PROXY_CONFIG, as pilot-agent sends it: mesh defaultConfig + annotation). */
interface ProxyConfigTracing {
  readonly sampling: number;
  readonly customTags: CustomTagInit[];
  readonly maxPathTagLength: number;
  readonly enableIstioTags: boolean;
}

function proxyConfigTracing(proxy: Proxy): ProxyConfigTracing {
  let pc: unknown = proxy.metadata.raw.PROXY_CONFIG;
  if (typeof pc === 'string') {
    try {
      pc = JSON.parse(pc);
    } catch {
      pc = undefined;
    }
  }
  const t = rec(rec(pc)?.tracing);
  const raw = typeof t?.sampling === 'number' ? t.sampling : 0;
  const customTags: CustomTagInit[] = [];
  for (const [tag, v] of Object.entries(rec(t?.customTags) ?? {})) {
    const c = rec(v);
    const env = rec(c?.environment);
    const header = rec(c?.header);
    const literal = rec(c?.literal);
    if (env) customTags.push({ tag, type: { case: 'environment', value: { name: str(env.name), defaultValue: str(env.defaultValue) } } });
    else if (header)
      customTags.push({ tag, type: { case: 'requestHeader', value: { name: str(header.name), defaultValue: str(header.defaultValue) } } });
    else if (literal) customTags.push({ tag, type: { case: 'literal', value: { value: str(literal.value) } } });
  }
  return {
    // istiod: a ProxyConfig sampling over 100 falls back to 1%; zero means unset (PILOT_TRACE_SAMPLING).
    sampling: raw === 0 ? DEFAULT_SAMPLING : raw > 100 ? 1 : raw,
    customTags,
    maxPathTagLength: typeof t?.maxPathTagLength === 'number' ? t.maxPathTagLength : 0,
    enableIstioTags: typeof t?.enableIstioTags === 'boolean' ? t.enableIstioTags : true,
  };
}

const rbacShadowTag = (tag: string, key: string): CustomTagInit => ({
  tag,
  type: {
    case: 'metadata',
    value: {
      kind: { kind: { case: 'request', value: {} } },
      metadataKey: { key: 'envoy.filters.http.rbac', path: [{ segment: { case: 'key', value: key } }] },
    },
  },
});

/** The dry-run AuthorizationPolicy tags: the same for every proxy, built once. */
const RBAC_SHADOW_TAGS: readonly CustomTagInit[] = [
  rbacShadowTag('istio.authorization.dry_run.allow_policy.name', 'istio_dry_run_allow_shadow_effective_policy_id'),
  rbacShadowTag('istio.authorization.dry_run.allow_policy.result', 'istio_dry_run_allow_shadow_engine_result'),
  rbacShadowTag('istio.authorization.dry_run.deny_policy.name', 'istio_dry_run_deny_shadow_effective_policy_id'),
  rbacShadowTag('istio.authorization.dry_run.deny_policy.result', 'istio_dry_run_deny_shadow_engine_result'),
];

/** The dry-run AuthorizationPolicy tags and the proxy's identity tags istiod adds when Istio tags are on. */
function istioTags(proxy: Proxy): CustomTagInit[] {
  const literal = (tag: string, value: string): CustomTagInit => ({ tag, type: { case: 'literal', value: { value } } });
  return [
    literal('istio.canonical_revision', proxy.labels[CANONICAL_REVISION_LABEL] || 'latest'),
    literal('istio.canonical_service', proxy.labels[CANONICAL_NAME_LABEL] || 'unknown'),
    literal('istio.mesh_id', proxy.metadata.meshId ?? 'unknown'),
    literal('istio.namespace', proxy.metadata.namespace ?? 'default'),
    literal('istio.cluster_id', proxy.metadata.clusterId ?? 'unknown'),
    ...RBAC_SHADOW_TAGS,
  ];
}

function telemetryTags(tags: Readonly<Record<string, Tracing_CustomTag>>): CustomTagInit[] {
  const out: CustomTagInit[] = [];
  for (const [tag, t] of Object.entries(tags)) {
    switch (t.type.case) {
      case 'literal':
        out.push({ tag, type: { case: 'literal', value: { value: t.type.value.value } } });
        break;
      case 'environment':
        out.push({ tag, type: { case: 'environment', value: { name: t.type.value.name, defaultValue: t.type.value.defaultValue } } });
        break;
      case 'header':
        out.push({ tag, type: { case: 'requestHeader', value: { name: t.type.value.name, defaultValue: t.type.value.defaultValue } } });
        break;
      // Formatter tags need CustomTag.value (Envoy API newer than meshpilot's; istiod sends them to 1.29+ proxies only).
      default:
        break;
    }
  }
  return out;
}

const byTag = (a: CustomTagInit, b: CustomTagInit): number => ((a.tag ?? '') < (b.tag ?? '') ? -1 : (a.tag ?? '') > (b.tag ?? '') ? 1 : 0);
const percent = (value: number): { value: number } => ({ value });

function sampling(random: number): Pick<HcmTracingInit, 'clientSampling' | 'randomSampling' | 'overallSampling'> {
  return { clientSampling: percent(100), randomSampling: percent(random), overallSampling: percent(100) };
}

const headers = (
  hs: readonly MeshConfig_ExtensionProvider_HttpHeader[],
): { header: { key: string; value: string }; appendAction: number }[] =>
  // OVERWRITE_IF_EXISTS_OR_ADD; env-sourced values resolve in istiod's environment, here empty.
  hs.map((h) => ({ header: { key: h.name, value: h.headerValue.case === 'value' ? h.headerValue.value : '' }, appendAction: 2 }));

interface ProviderTracing {
  readonly name: string;
  readonly config: Any;
  readonly maxTagLength: number;
  readonly spawnUpstreamSpan: boolean;
}

/** istiod's configureFromProviderConfig: undefined when the provider cannot trace or its service is unknown. */
function providerTracing(push: PushContext, proxy: Proxy, p: ExtensionProvider): ProviderTracing | undefined {
  const router = proxy.type === 'router';
  const prov = p.provider;
  switch (prov.case) {
    case 'zipkin': {
      const t = lookupProviderCluster(push, prov.value.service, prov.value.port);
      if (!t) return undefined;
      // The collector_service form istiod sends to 1.29+ proxies needs an Envoy API newer than
      // meshpilot's: every proxy gets the cluster/endpoint/hostname form (istiod's for older ones).
      const config = packAny(ZipkinConfigSchema, {
        collectorCluster: t.cluster,
        collectorEndpoint: prov.value.path || '/api/v2/spans',
        collectorHostname: t.hostname,
        collectorEndpointVersion: ZipkinConfig_CollectorEndpointVersion.HTTP_JSON,
        traceId128bit: !prov.value.enable64bitTraceId,
        sharedSpanContext: false,
      });
      return { name: 'envoy.tracers.zipkin', config, maxTagLength: prov.value.maxTagLength, spawnUpstreamSpan: router };
    }
    case 'datadog': {
      const t = lookupProviderCluster(push, prov.value.service, prov.value.port);
      if (!t) return undefined;
      const config = packAny(DatadogConfigSchema, {
        collectorCluster: t.cluster,
        serviceName: proxy.cluster ?? '',
        collectorHostname: t.hostname,
      });
      return { name: 'envoy.tracers.datadog', config, maxTagLength: prov.value.maxTagLength, spawnUpstreamSpan: router };
    }
    case 'skywalking': {
      const t = lookupProviderCluster(push, prov.value.service, prov.value.port);
      if (!t) return undefined;
      const config = packAny(SkyWalkingConfigSchema, {
        grpcService: { targetSpecifier: { case: 'envoyGrpc', value: { clusterName: t.cluster, authority: t.hostname } } },
      });
      return { name: 'envoy.tracers.skywalking', config, maxTagLength: 0, spawnUpstreamSpan: true };
    }
    case 'opentelemetry': {
      const o = prov.value;
      const t = lookupProviderCluster(push, o.service, o.port);
      if (!t) return undefined;
      const http = o.http;
      const config = packAny(OpenTelemetryConfigSchema, {
        serviceName: proxy.cluster ?? '',
        ...(http
          ? {
              httpService: {
                httpUri: {
                  uri: joinPath(t.hostname, http.path),
                  httpUpstreamType: { case: 'cluster', value: t.cluster },
                  ...(http.timeout ? { timeout: http.timeout } : {}),
                },
                requestHeadersToAdd: headers(http.headers),
              },
            }
          : {
              grpcService: {
                targetSpecifier: { case: 'envoyGrpc', value: { clusterName: t.cluster, authority: t.hostname } },
                ...(o.grpc?.timeout ? { timeout: o.grpc.timeout } : {}),
                initialMetadata: (o.grpc?.initialMetadata ?? []).map((h) => ({
                  key: h.name,
                  value: h.headerValue.case === 'value' ? h.headerValue.value : '',
                })),
              },
            }),
      });
      return { name: 'envoy.tracers.opentelemetry', config, maxTagLength: o.maxTagLength, spawnUpstreamSpan: router };
    }
    default:
      return undefined;
  }
}

/** Go's url.JoinPath for a host and a path (the OTLP/HTTP traces endpoint). */
function joinPath(host: string, path: string): string {
  const p = path.replace(/^\/+/, '');
  return p === '' ? host : `${host}/${p}`;
}

export interface HcmTracing {
  readonly tracing?: HcmTracingInit;
  readonly requestIdExtension: RequestIdInit;
}

const requestId = (useForSampling: boolean): RequestIdInit => ({
  typedConfig: packAny(UuidRequestIdConfigSchema, { useRequestIdForTraceSampling: useForSampling }),
});

/** The HCM's tracing and request-id extension for a listener of `cls` (`spec`: the merged Telemetry tracing, or undefined). */
export function hcmTracing(
  push: PushContext,
  proxy: Proxy,
  cls: ListenerClass,
  merged: { readonly client: TracingSpec; readonly server: TracingSpec } | undefined,
): HcmTracing {
  if (!merged) {
    if (!push.mesh.telemetry.enableTracing) return { requestIdExtension: requestId(true) };
    const pc = proxyConfigTracing(proxy);
    const tags = [...(pc.enableIstioTags ? istioTags(proxy) : []), ...pc.customTags].sort(byTag);
    return {
      tracing: {
        ...sampling(pc.sampling),
        customTags: tags,
        ...(pc.maxPathTagLength !== 0 ? { maxPathTagLength: pc.maxPathTagLength } : {}),
      },
      requestIdExtension: requestId(true),
    };
  }
  const spec = cls === 'inbound' ? merged.server : merged.client;
  if (spec.disabled || !spec.provider) return { requestIdExtension: requestId(true) };
  const p = providerTracing(push, proxy, spec.provider);
  // istiod logs that the provider cannot be configured and leaves tracing off.
  if (!p) return { requestIdExtension: requestId(true) };
  const pc = proxyConfigTracing(proxy);
  // Telemetry's custom tags replace the ProxyConfig's (istiod: the latter only when there are none).
  const custom = Object.keys(spec.customTags).length > 0 ? telemetryTags(spec.customTags) : pc.customTags;
  const tags = [...(spec.enableIstioTags ? istioTags(proxy) : []), ...custom].sort(byTag);
  const maxPathTagLength = p.maxTagLength !== 0 ? p.maxTagLength : pc.maxPathTagLength;
  return {
    tracing: {
      ...(p.spawnUpstreamSpan ? { spawnUpstreamSpan: true } : {}),
      provider: { name: p.name, configType: { case: 'typedConfig', value: p.config } },
      ...(maxPathTagLength !== 0 ? { maxPathTagLength } : {}),
      ...sampling(spec.randomSamplingPercentage ?? pc.sampling),
      customTags: tags,
    },
    requestIdExtension: requestId(spec.useRequestIdForTraceSampling),
  };
}
