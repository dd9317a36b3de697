/**
 * The `istio.stats` filter (Istio proxy's stats extension, `stats.PluginConfig`) for a listener,
 * as istiod's generateStatsConfig: one per prometheus provider in scope whose metrics are not all
 * disabled for the listener's side; overrides name the Prometheus metric, add dimensions (UPSERT)
 * or tags to remove, or drop the metric.
 */
import type { Any } from '@bufbuild/protobuf/wkt';
import { PluginConfigSchema } from '../../gen/envoy/extensions/stats/config_pb.js';
import { packAny } from '../common.js';
import type { ListenerClass, ProviderMetrics } from './merge.js';

export const STATS_FILTER = 'istio.stats';

const PROMETHEUS_NAMES: Readonly<Record<string, string>> = {
  REQUEST_COUNT: 'requests_total',
  REQUEST_DURATION: 'request_duration_milliseconds',
  REQUEST_SIZE: 'request_bytes',
  RESPONSE_SIZE: 'response_bytes',
  TCP_OPENED_CONNECTIONS: 'tcp_connections_opened_total',
  TCP_CLOSED_CONNECTIONS: 'tcp_connections_closed_total',
  TCP_SENT_BYTES: 'tcp_sent_bytes_total',
  TCP_RECEIVED_BYTES: 'tcp_received_bytes_total',
  GRPC_REQUEST_MESSAGES: 'request_messages_total',
  GRPC_RESPONSE_MESSAGES: 'response_messages_total',
};

/** The stats filter config for one prometheus provider on a listener of `cls`, or undefined when its metrics are off there. */
export function statsConfig(cls: ListenerClass, metrics: ProviderMetrics): Any | undefined {
  const side = cls === 'inbound' ? metrics.server : metrics.client;
  if (side.disabled) return undefined;
  return packAny(PluginConfigSchema, {
    // A server (inbound) or gateway does not fall back to the Host header for the destination service.
    disableHostHeaderFallback: cls === 'inbound' || cls === 'gateway',
    ...(metrics.reportingInterval ? { tcpReportingDuration: metrics.reportingInterval } : {}),
    metrics: side.overrides.map((o) => ({
      name: PROMETHEUS_NAMES[o.name] ?? o.name,
      drop: o.disabled,
      dimensions: Object.fromEntries(o.tags.filter((t) => !t.remove).map((t) => [t.name, t.value])),
      tagsToRemove: o.tags.filter((t) => t.remove).map((t) => t.name),
    })),
  });
}
