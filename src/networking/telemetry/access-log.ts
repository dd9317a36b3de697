/**
 * Envoy access logs from Telemetry providers (istiod's telemetry_logging.go and accesslog.go): a
 * file (the built-in `envoy` provider follows MeshConfig's accessLogEncoding/Format), gRPC ALS for
 * HTTP or TCP, OpenTelemetry ALS; a Telemetry CEL filter becomes an extension filter. Without any
 * Telemetry logging config, the legacy MeshConfig `accessLogFile` / `enableEnvoyAccessLogService`.
 */
import type { JsonObject } from '@bufbuild/protobuf';
import type { Any } from '@bufbuild/protobuf/wkt';
import type { AccessLogFilterSchema, AccessLogSchema } from '../../gen/envoy/config/accesslog/v3/accesslog_pb.js';
import { ApiVersion } from '../../gen/envoy/config/core/v3/config_source_pb.js';
import type { TypedExtensionConfigSchema } from '../../gen/envoy/config/core/v3/extension_pb.js';
import type { SubstitutionFormatStringSchema } from '../../gen/envoy/config/core/v3/substitution_format_string_pb.js';
import { FileAccessLogSchema } from '../../gen/envoy/extensions/access_loggers/file/v3/file_pb.js';
import { ExpressionFilterSchema } from '../../gen/envoy/extensions/access_loggers/filters/cel/v3/cel_pb.js';
import { HttpGrpcAccessLogConfigSchema, TcpGrpcAccessLogConfigSchema } from '../../gen/envoy/extensions/access_loggers/grpc/v3/als_pb.js';
import { OpenTelemetryAccessLogConfigSchema } from '../../gen/envoy/extensions/access_loggers/open_telemetry/v3/logs_service_pb.js';
import { ReqWithoutQuerySchema } from '../../gen/envoy/extensions/formatter/req_without_query/v3/req_without_query_pb.js';
import type {
  MeshConfig_ExtensionProvider_EnvoyFileAccessLogProvider,
  MeshConfig_ExtensionProvider_EnvoyOpenTelemetryLogProvider,
} from '../../gen/mesh/v1alpha1/config_pb.js';
import type { PushContext, ApplicableTelemetry } from '../../model/index.js';
import type { ExtensionProvider, MeshTelemetry } from '../../config/index.js';
import { packAny, type Init } from '../common.js';
import { lookupProviderCluster } from './lookup.js';
import { findProvider, mergeLogs, modeOf, type ListenerClass, type LoggingSpec } from './merge.js';

export type AccessLogInit = Init<typeof AccessLogSchema>;
type FilterInit = Init<typeof AccessLogFilterSchema>;
type FormatInit = Init<typeof SubstitutionFormatStringSchema>;

export const FILE_ACCESS_LOG = 'envoy.access_loggers.file';
const HTTP_GRPC_ACCESS_LOG = 'envoy.access_loggers.http_grpc';
const TCP_GRPC_ACCESS_LOG = 'envoy.tcp_grpc_access_log';
const OTEL_ACCESS_LOG = 'envoy.access_loggers.open_telemetry';
const CEL_FILTER = 'envoy.access_loggers.extension_filters.cel';
/** MeshConfig's ALS cluster (made by the bootstrap). */
const ALS_CLUSTER = 'envoy_accesslog_service';

/** istiod's EnvoyTextLogFormat (Istio 1.9 onwards). */
export const ENVOY_TEXT_LOG_FORMAT =
  '[%START_TIME%] "%REQ(:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%" %RESPONSE_CODE% %RESPONSE_FLAGS% ' +
  '%RESPONSE_CODE_DETAILS% %CONNECTION_TERMINATION_DETAILS% "%UPSTREAM_TRANSPORT_FAILURE_REASON%" %BYTES_RECEIVED% %BYTES_SENT% ' +
  '%DURATION% %RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)% "%REQ(X-FORWARDED-FOR)%" "%REQ(USER-AGENT)%" "%REQ(X-REQUEST-ID)%" "%REQ(:AUTHORITY)%" "%UPSTREAM_HOST%" ' +
  '%UPSTREAM_CLUSTER_RAW% %UPSTREAM_LOCAL_ADDRESS% %DOWNSTREAM_LOCAL_ADDRESS% %DOWNSTREAM_REMOTE_ADDRESS% %REQUESTED_SERVER_NAME% %ROUTE_NAME%\n';

/** istiod's EnvoyJSONLogFormatIstio. */
const ENVOY_JSON_LOG_FORMAT: JsonObject = {
  start_time: '%START_TIME%',
  route_name: '%ROUTE_NAME%',
  method: '%REQ(:METHOD)%',
  path: '%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%',
  protocol: '%PROTOCOL%',
  response_code: '%RESPONSE_CODE%',
  response_flags: '%RESPONSE_FLAGS%',
  response_code_details: '%RESPONSE_CODE_DETAILS%',
  connection_termination_details: '%CONNECTION_TERMINATION_DETAILS%',
  bytes_received: '%BYTES_RECEIVED%',
  bytes_sent: '%BYTES_SENT%',
  duration: '%DURATION%',
  upstream_service_time: '%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)%',
  x_forwarded_for: '%REQ(X-FORWARDED-FOR)%',
  user_agent: '%REQ(USER-AGENT)%',
  request_id: '%REQ(X-REQUEST-ID)%',
  authority: '%REQ(:AUTHORITY)%',
  upstream_host: '%UPSTREAM_HOST%',
  upstream_cluster: '%UPSTREAM_CLUSTER_RAW%',
  upstream_local_address: '%UPSTREAM_LOCAL_ADDRESS%',
  downstream_local_address: '%DOWNSTREAM_LOCAL_ADDRESS%',
  downstream_remote_address: '%DOWNSTREAM_REMOTE_ADDRESS%',
  requested_server_name: '%REQUESTED_SERVER_NAME%',
  upstream_transport_failure_reason: '%UPSTREAM_TRANSPORT_FAILURE_REASON%',
};

/** Peer metadata the metadata-exchange filter leaves in filter state (sent to gRPC log services). */
const PEER_STATE = ['upstream_peer', 'downstream_peer'];
const PEER_STATE_WITH_WASM = [
  ...PEER_STATE,
  'wasm.upstream_peer',
  'wasm.upstream_peer_id',
  'wasm.downstream_peer',
  'wasm.downstream_peer_id',
];

const REQ_WITHOUT_QUERY: Init<typeof TypedExtensionConfigSchema> = {
  name: 'envoy.formatter.req_without_query',
  typedConfig: packAny(ReqWithoutQuerySchema, {}),
};
const formattersFor = (texts: readonly string[]): Init<typeof TypedExtensionConfigSchema>[] =>
  texts.some((t) => t.includes('%REQ_WITHOUT_QUERY')) ? [REQ_WITHOUT_QUERY] : [];
const jsonValues = (o: JsonObject): string[] => Object.values(o).filter((v): v is string => typeof v === 'string');

const withNewline = (f: string): string => (f === '' ? ENVOY_TEXT_LOG_FORMAT : f.endsWith('\n') ? f : `${f}\n`);

/**
 * istio-proxy's peer metadata command operators (%UPSTREAM_PEER%, %DOWNSTREAM_PEER(...)%, …), read
 * from what metadata exchange leaves in filter state. Upstream Envoy refuses a format naming one
 * ("Not supported field in StreamInfo"), so a proxy without metadata exchange gets `-` there,
 * which is what Envoy prints for a value it does not have.
 */
const PEER_OPERATOR = /%(?:UPSTREAM|DOWNSTREAM)_PEER(?:_[A-Z]+)?(?:\([^)%]*\))?%/g;

/** Whether formats may use the peer operators (the proxy runs metadata exchange). */
export type PeerOperators = boolean;

const portable = (f: string, peer: PeerOperators): string => (peer ? f : f.replace(PEER_OPERATOR, '-'));
const portableLabels = (labels: JsonObject, peer: PeerOperators): JsonObject =>
  peer ? labels : Object.fromEntries(Object.entries(labels).map(([k, v]) => [k, typeof v === 'string' ? portable(v, false) : v]));

function textFormat(text: string, omitEmptyValues: boolean, peer: PeerOperators): FormatInit {
  const f = portable(withNewline(text), peer);
  const formatters = formattersFor([f]);
  return {
    format: { case: 'textFormatSource', value: { specifier: { case: 'inlineString', value: f } } },
    omitEmptyValues,
    ...(formatters.length > 0 ? { formatters } : {}),
  };
}

function jsonFormat(given: JsonObject, omitEmptyValues: boolean, peer: PeerOperators): FormatInit {
  const labels = portableLabels(given, peer);
  const formatters = formattersFor(jsonValues(labels));
  return {
    format: { case: 'jsonFormat', value: labels },
    jsonFormatOptions: { sortProperties: false },
    omitEmptyValues,
    ...(formatters.length > 0 ? { formatters } : {}),
  };
}

const fileLog = (path: string, logFormat: FormatInit): AccessLogInit => ({
  name: FILE_ACCESS_LOG,
  configType: {
    case: 'typedConfig',
    value: packAny(FileAccessLogSchema, { path, accessLogFormat: { case: 'logFormat', value: logFormat } }),
  },
});

/** istiod's FileAccessLogFromMeshConfig: MeshConfig's encoding and format (a bad JSON format falls back to Istio's). */
function meshFileLog(path: string, mesh: MeshTelemetry, peer: PeerOperators): AccessLogInit {
  if (mesh.accessLogEncoding === 'TEXT') return fileLog(path, textFormat(mesh.accessLogFormat, false, peer));
  let labels = ENVOY_JSON_LOG_FORMAT;
  if (mesh.accessLogFormat !== '') {
    try {
      const parsed: unknown = JSON.parse(mesh.accessLogFormat);
      if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) labels = parsed as JsonObject;
    } catch {
      // istiod logs the parse error and keeps its default format.
    }
  }
  const { omitEmptyValues: _unused, ...f } = jsonFormat(labels, false, peer);
  return fileLog(path, f);
}

function providerFileLog(p: MeshConfig_ExtensionProvider_EnvoyFileAccessLogProvider, peer: PeerOperators): AccessLogInit {
  const path = p.path === '' ? '/dev/stdout' : p.path;
  const lf = p.logFormat?.logFormat;
  // No labels: Istio's JSON format.
  if (lf?.case === 'labels')
    return fileLog(path, jsonFormat(Object.keys(lf.value).length > 0 ? lf.value : ENVOY_JSON_LOG_FORMAT, p.omitEmptyValues, peer));
  return fileLog(path, textFormat(lf?.case === 'text' ? lf.value : '', p.omitEmptyValues, peer));
}

const grpcService = (
  cluster: string,
  authority?: string,
): NonNullable<Init<typeof HttpGrpcAccessLogConfigSchema>['commonConfig']>['grpcService'] => ({
  targetSpecifier: { case: 'envoyGrpc', value: { clusterName: cluster, ...(authority !== undefined ? { authority } : {}) } },
});

function otelLog(
  push: PushContext,
  p: MeshConfig_ExtensionProvider_EnvoyOpenTelemetryLogProvider,
  peer: PeerOperators,
): AccessLogInit | undefined {
  const target = lookupProviderCluster(push, p.service, p.port);
  if (!target) return undefined;
  const text = portable(p.logFormat?.text ? p.logFormat.text : ENVOY_TEXT_LOG_FORMAT, peer);
  const labels = portableLabels(p.logFormat?.labels ?? {}, peer);
  const keys = Object.keys(labels).sort();
  const formatters = formattersFor([text, ...jsonValues(labels)]);
  return {
    name: OTEL_ACCESS_LOG,
    configType: {
      case: 'typedConfig',
      value: packAny(OpenTelemetryAccessLogConfigSchema, {
        commonConfig: {
          logName: p.logName || 'otel_envoy_accesslog',
          grpcService: grpcService(target.cluster, target.hostname),
          transportApiVersion: ApiVersion.V3,
          filterStateObjectsToLog: PEER_STATE_WITH_WASM,
        },
        disableBuiltinLabels: true,
        body: { value: { case: 'stringValue', value: text } },
        ...(keys.length > 0
          ? {
              attributes: {
                values: keys.map((k) => ({
                  key: k,
                  value: { value: { case: 'stringValue' as const, value: typeof labels[k] === 'string' ? labels[k] : '' } },
                })),
              },
            }
          : {}),
        formatters,
      }),
    },
  };
}

/** istiod's telemetryAccessLog: the access log of one provider, or undefined (not a logging provider, or its service is unknown). */
export function providerAccessLog(push: PushContext, p: ExtensionProvider, peer: PeerOperators = true): AccessLogInit | undefined {
  const prov = p.provider;
  switch (prov.case) {
    case 'envoyFileAccessLog':
      return p.name === 'envoy' && prov.value.logFormat === undefined && !prov.value.omitEmptyValues
        ? meshFileLog(prov.value.path, push.mesh.telemetry, peer)
        : providerFileLog(prov.value, peer);
    case 'envoyHttpAls':
    case 'envoyTcpAls': {
      const target = lookupProviderCluster(push, prov.value.service, prov.value.port);
      if (!target) return undefined;
      const http = prov.case === 'envoyHttpAls';
      const commonConfig = {
        logName: prov.value.logName || (http ? 'http_envoy_accesslog' : 'tcp_envoy_accesslog'),
        grpcService: grpcService(target.cluster, target.hostname),
        transportApiVersion: ApiVersion.V3,
        filterStateObjectsToLog: prov.value.filterStateObjectsToLog.length > 0 ? [...prov.value.filterStateObjectsToLog] : PEER_STATE,
      };
      if (prov.case === 'envoyTcpAls')
        return {
          name: TCP_GRPC_ACCESS_LOG,
          configType: { case: 'typedConfig', value: packAny(TcpGrpcAccessLogConfigSchema, { commonConfig }) },
        };
      return {
        name: HTTP_GRPC_ACCESS_LOG,
        configType: {
          case: 'typedConfig',
          value: packAny(HttpGrpcAccessLogConfigSchema, {
            commonConfig,
            additionalRequestHeadersToLog: [...prov.value.additionalRequestHeadersToLog],
            additionalResponseHeadersToLog: [...prov.value.additionalResponseHeadersToLog],
            additionalResponseTrailersToLog: [...prov.value.additionalResponseTrailersToLog],
          }),
        },
      };
    }
    case 'envoyOtelAls':
      return otelLog(push, prov.value, peer);
    default:
      return undefined;
  }
}

const celFilter = (expression: string): FilterInit => ({
  filterSpecifier: {
    case: 'extensionFilter',
    value: { name: CEL_FILTER, configType: { case: 'typedConfig', value: packAny(ExpressionFilterSchema, { expression }) } },
  },
});

/** istiod's listener access log filter: only connections no filter chain matched (NR). */
export const NO_ROUTE_FILTER: FilterInit = { filterSpecifier: { case: 'responseFlagFilter', value: { flags: ['NR'] } } };

function andFilters(filters: readonly FilterInit[]): FilterInit | undefined {
  if (filters.length <= 1) return filters[0];
  return { filterSpecifier: { case: 'andFilter', value: { filters: [...filters] } } };
}

interface LoggingConfig {
  readonly name: string;
  readonly spec: LoggingSpec;
  readonly log: AccessLogInit;
}

/** istiod's Telemetries.AccessLogging: undefined when no Telemetry or default provider configures logging (legacy MeshConfig applies). */
function loggingConfigs(
  push: PushContext,
  applicable: ApplicableTelemetry,
  cls: ListenerClass,
  peer: PeerOperators,
): LoggingConfig[] | undefined {
  const mesh = push.mesh.telemetry;
  if (applicable.logging.length === 0 && mesh.defaultProviders.accessLogging.length === 0) return undefined;
  const out: LoggingConfig[] = [];
  for (const [name, spec] of mergeLogs(applicable.logging, mesh.defaultProviders, modeOf(cls))) {
    const p = findProvider(mesh, name);
    const log = p && providerAccessLog(push, p, peer);
    if (p && log) out.push({ name: p.name, spec, log });
  }
  return out.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * The access logs of an HCM, a tcp_proxy or a listener (`listener`: only NR, and none when
 * disableEnvoyListenerLog), as istiod's setHTTPAccessLog / setTCPAccessLog / setListenerAccessLog.
 */
export function accessLogsFor(
  push: PushContext,
  applicable: ApplicableTelemetry,
  cls: ListenerClass,
  where: 'http' | 'tcp' | 'listener',
  peer: PeerOperators,
): AccessLogInit[] {
  const mesh = push.mesh.telemetry;
  if (where === 'listener' && mesh.disableEnvoyListenerLog) return [];
  const base = where === 'listener' ? NO_ROUTE_FILTER : undefined;
  const cfgs = loggingConfigs(push, applicable, cls, peer);
  if (!cfgs || cfgs.length === 0) {
    const out: AccessLogInit[] = [];
    if (mesh.accessLogFile !== '') out.push({ ...meshFileLog(mesh.accessLogFile, mesh, peer), ...(base ? { filter: base } : {}) });
    if (mesh.enableEnvoyAccessLogService) out.push(legacyAls(where));
    return out;
  }
  return cfgs
    .filter((c) => !c.spec.disabled)
    .map((c) => {
      const filter = andFilters([...(base ? [base] : []), ...(c.spec.filter ? [celFilter(c.spec.filter.expression)] : [])]);
      return { ...c.log, ...(filter ? { filter } : {}) };
    });
}

function legacyAls(where: 'http' | 'tcp' | 'listener'): AccessLogInit {
  const commonConfig = {
    logName: where === 'http' ? 'http_envoy_accesslog' : where === 'tcp' ? 'tcp_envoy_accesslog' : 'listener_envoy_accesslog',
    grpcService: grpcService(ALS_CLUSTER),
    transportApiVersion: ApiVersion.V3,
    filterStateObjectsToLog: PEER_STATE_WITH_WASM,
  };
  if (where === 'http')
    return {
      name: HTTP_GRPC_ACCESS_LOG,
      configType: { case: 'typedConfig', value: packAny(HttpGrpcAccessLogConfigSchema, { commonConfig }) },
    };
  const value: Any = packAny(TcpGrpcAccessLogConfigSchema, { commonConfig });
  return {
    name: TCP_GRPC_ACCESS_LOG,
    configType: { case: 'typedConfig', value },
    ...(where === 'listener' ? { filter: NO_ROUTE_FILTER } : {}),
  };
}
