/**
 * Telemetry (telemetry.istio.io) applied to generated listeners: the seam the listener builders
 * call. For one proxy and listener class it returns what istiod adds to an HCM (istio.stats HTTP
 * filters, access logs, tracing, the request-id extension) or to a TCP chain (istio.stats network
 * filters and the tcp_proxy's access logs), resolved from the Telemetry objects that apply to the
 * workload and the mesh config's providers.
 */
import type { Any } from '@bufbuild/protobuf/wkt';
import type { ApplicableTelemetry, Proxy, PushContext } from '../../model/index.js';
import type { ExtensionProvider } from '../../config/index.js';
import type { HttpFilterInit } from '../listener/hcm.js';
import type { FilterInit } from '../listener/tcp-proxy.js';
import { accessLogsFor, type AccessLogInit } from './access-log.js';
import { findProvider, mergeLogs, mergeMetrics, mergeTracing, modeOf, type ListenerClass } from './merge.js';
import { STATS_FILTER, statsConfig } from './stats.js';
import { hcmTracing, type HcmTracingInit, type RequestIdInit } from './tracing.js';
import { create, toBinary } from '@bufbuild/protobuf';
import { HttpConnectionManager_TracingSchema } from '../../gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js';
import { CANONICAL_NAME_LABEL, CANONICAL_REVISION_LABEL } from '../../config/constants.js';

export type { ListenerClass } from './merge.js';
export type { AccessLogInit } from './access-log.js';

export interface HcmTelemetry {
  /** istio.stats filters, placed after CORS and before the router. */
  readonly httpFilters: readonly HttpFilterInit[];
  readonly accessLog: readonly AccessLogInit[];
  readonly tracing?: HcmTracingInit;
  readonly requestIdExtension: RequestIdInit;
}

export interface TcpTelemetry {
  /** istio.stats network filters, placed right before tcp_proxy. */
  readonly filters: readonly FilterInit[];
  readonly accessLog: readonly AccessLogInit[];
}

const applicableFor = (push: PushContext, proxy: Proxy): ApplicableTelemetry => push.telemetry.forWorkload(proxy.namespace, proxy.labels);

/**
 * istiod's telemetryFilters: one istio.stats config per prometheus provider in scope (by name
 * order); none for a proxy without Istio's stats extension (stock Envoy).
 */
function statsConfigs(push: PushContext, proxy: Proxy, applicable: ApplicableTelemetry, cls: ListenerClass): Any[] {
  if (!proxy.extensions.supports(STATS_FILTER)) return [];
  const mesh = push.mesh.telemetry;
  const metrics = mergeMetrics(applicable.metrics, mesh.defaultProviders);
  const logs = mergeLogs(applicable.logging, mesh.defaultProviders, modeOf(cls));
  const names = new Set([...[...logs].filter(([, l]) => !l.disabled).map(([n]) => n), ...metrics.keys()]);
  const out: Any[] = [];
  for (const name of [...names].sort()) {
    const p = findProvider(mesh, name);
    const m = metrics.get(name);
    const config = p?.provider.case === 'prometheus' && m ? statsConfig(cls, m) : undefined;
    if (config) out.push(config);
  }
  return out;
}

/**
 * Which Telemetries apply to the proxy's workload: the part of a cache key that stands for its
 * stats filters, access logs and request-id extension (everything but tracing's tags).
 */
export function telemetryAppliedKey(push: PushContext, proxy: Proxy): string {
  return push.telemetry.index.forWorkload(proxy.namespace, proxy.labels).key;
}

/**
 * What istiod adds to an HTTP connection manager of a listener of `cls` for this proxy, but its
 * tracing. Stats filters, access logs and the request-id extension are shared by every workload
 * the same Telemetries apply to; only tracing carries per-workload values (its Istio tags).
 */
export function hcmTelemetryWithoutTracing(push: PushContext, proxy: Proxy, cls: ListenerClass): Omit<HcmTelemetry, 'tracing'> {
  return push.derive(`telemetry|hcm|${cls}|${telemetryAppliedKey(push, proxy)}|${proxy.extensions.key}`, () => {
    const applicable = applicableFor(push, proxy);
    return {
      httpFilters: statsConfigs(push, proxy, applicable, cls).map((c) => ({
        name: STATS_FILTER,
        configType: { case: 'typedConfig' as const, value: c },
      })),
      accessLog: accessLogsFor(push, applicable, cls, 'http', proxy.extensions.supports('istio.metadata_exchange')),
      // Its sampling choice follows the Telemetry spec alone, whichever workload's tags come with it.
      requestIdExtension: hcmTracing(push, proxy, cls, mergeTracing(applicable.tracing, push.mesh.telemetry)).requestIdExtension,
    };
  });
}

/** Built where it is used, not cached: the listeners that carry it are (a copy per workload would be ~3 KiB of tags each). */
function tracingFor(push: PushContext, proxy: Proxy, cls: ListenerClass): HcmTracingInit | undefined {
  return hcmTracing(push, proxy, cls, mergeTracing(applicableFor(push, proxy).tracing, push.mesh.telemetry)).tracing;
}

/** What istiod adds to an HTTP connection manager of a listener of `cls` for this proxy. */
export function hcmTelemetry(push: PushContext, proxy: Proxy, cls: ListenerClass): HcmTelemetry {
  const tracing = tracingFor(push, proxy, cls);
  return { ...hcmTelemetryWithoutTracing(push, proxy, cls), ...(tracing ? { tracing } : {}) };
}

/** The proxy's HCM tracing for listeners of `cls`, encoded (the value of HttpConnectionManager field 7); none when tracing is off. */
export function encodedHcmTracing(push: PushContext, proxy: Proxy, cls: ListenerClass): Uint8Array | undefined {
  return push.derive(`telemetry|tracing-bytes|${cls}|${telemetryViewKey(push, proxy)}`, () => {
    const tracing = tracingFor(push, proxy, cls);
    return tracing ? toBinary(HttpConnectionManager_TracingSchema, create(HttpConnectionManager_TracingSchema, tracing)) : undefined;
  });
}

/** What istiod adds to a TCP filter chain of a listener of `cls` (stats filters, tcp_proxy access logs). */
export function tcpTelemetry(push: PushContext, proxy: Proxy, cls: ListenerClass): TcpTelemetry {
  return push.derive(`telemetry|tcp|${cls}|${telemetryAppliedKey(push, proxy)}|${proxy.extensions.key}`, () => {
    const applicable = applicableFor(push, proxy);
    return {
      filters: statsConfigs(push, proxy, applicable, cls).map((c) => ({
        name: STATS_FILTER,
        configType: { case: 'typedConfig' as const, value: c },
      })),
      accessLog: accessLogsFor(push, applicable, cls, 'tcp', proxy.extensions.supports('istio.metadata_exchange')),
    };
  });
}

/** A listener's own access logs (istiod's setListenerAccessLog: connections no chain matched, NR). */
export function listenerAccessLogs(push: PushContext, proxy: Proxy, cls: ListenerClass): readonly AccessLogInit[] {
  return push.derive(`telemetry|listener|${cls}|${telemetryAppliedKey(push, proxy)}|${proxy.extensions.key}`, () =>
    accessLogsFor(push, applicableFor(push, proxy), cls, 'listener', proxy.extensions.supports('istio.metadata_exchange')),
  );
}

/** Whether the tracing provider of the proxy's Telemetries names its service after node.cluster. */
function tracingReadsNodeCluster(push: PushContext, proxy: Proxy, applied: string): boolean {
  return push.derive(`telemetry|node-cluster|${applied}`, () => {
    const merged = mergeTracing(applicableFor(push, proxy).tracing, push.mesh.telemetry);
    const reads = (p: ExtensionProvider | undefined): boolean => p?.provider.case === 'datadog' || p?.provider.case === 'opentelemetry';
    return merged !== undefined && (reads(merged.client.provider) || reads(merged.server.provider));
  });
}

const viewKeys = new WeakMap<PushContext, WeakMap<Proxy, string>>();

/**
 * The part of a cache key that stands for the telemetry a proxy gets: which Telemetries apply to
 * it, and the proxy attributes its tracing reads (the Istio tags' canonical service and revision,
 * namespace, mesh and cluster ids; the ProxyConfig; node.cluster only for providers that name
 * their service after it). Listener caches add it to their keys, so proxies of one view that
 * differ here do not share listeners; anything else about the proxy stays out of it.
 */
export function telemetryViewKey(push: PushContext, proxy: Proxy): string {
  let byProxy = viewKeys.get(push);
  if (!byProxy) viewKeys.set(push, (byProxy = new WeakMap()));
  let key = byProxy.get(proxy);
  if (key === undefined) {
    const applied = telemetryAppliedKey(push, proxy);
    const md = proxy.metadata;
    const nodeCluster = tracingReadsNodeCluster(push, proxy, applied) ? (proxy.cluster ?? '') : '';
    key = [
      applied,
      proxy.type,
      proxy.namespace,
      md.namespace ?? '',
      proxy.labels[CANONICAL_NAME_LABEL] ?? '',
      proxy.labels[CANONICAL_REVISION_LABEL] ?? '',
      md.meshId ?? '',
      md.clusterId ?? '',
      nodeCluster,
      JSON.stringify(md.raw.PROXY_CONFIG ?? null),
    ].join('~');
    byProxy.set(proxy, key);
  }
  return key;
}
