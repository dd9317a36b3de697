/**
 * The telemetry part of MeshConfig as istiod applies it: extension providers (istiod's defaults
 * `prometheus`, `stackdriver` and `envoy` → /dev/stdout, then the user's, replacing a default of
 * the same name), default providers, and the legacy settings used when no Telemetry applies
 * (enableTracing, accessLogFile/Encoding/Format, enableEnvoyAccessLogService).
 */
import { create } from '@bufbuild/protobuf';
import {
  MeshConfig_AccessLogEncoding,
  MeshConfig_ExtensionProviderSchema,
  type MeshConfig as MeshConfigProto,
  type MeshConfig_ExtensionProvider,
} from '../../gen/mesh/v1alpha1/config_pb.js';

export type ExtensionProvider = MeshConfig_ExtensionProvider;

export interface DefaultProviders {
  readonly metrics: readonly string[];
  readonly tracing: readonly string[];
  readonly accessLogging: readonly string[];
}

export interface MeshTelemetry {
  readonly extensionProviders: readonly ExtensionProvider[];
  readonly defaultProviders: DefaultProviders;
  /** Legacy tracing when no Telemetry configures it (istiod's default: on, PILOT_TRACE_SAMPLING 1%). */
  readonly enableTracing: boolean;
  readonly accessLogFile: string;
  readonly accessLogEncoding: 'TEXT' | 'JSON';
  readonly accessLogFormat: string;
  readonly enableEnvoyAccessLogService: boolean;
  readonly disableEnvoyListenerLog: boolean;
}

function istiodDefaultProviders(): ExtensionProvider[] {
  return [
    create(MeshConfig_ExtensionProviderSchema, { name: 'prometheus', provider: { case: 'prometheus', value: {} } }),
    create(MeshConfig_ExtensionProviderSchema, { name: 'stackdriver', provider: { case: 'stackdriver', value: {} } }),
    create(MeshConfig_ExtensionProviderSchema, { name: 'envoy', provider: { case: 'envoyFileAccessLog', value: { path: '/dev/stdout' } } }),
  ];
}

export function defaultMeshTelemetry(): MeshTelemetry {
  return {
    extensionProviders: istiodDefaultProviders(),
    defaultProviders: { metrics: [], tracing: [], accessLogging: [] },
    enableTracing: true,
    accessLogFile: '',
    accessLogEncoding: 'TEXT',
    accessLogFormat: '',
    enableEnvoyAccessLogService: false,
    disableEnvoyListenerLog: false,
  };
}

/**
 * The telemetry settings of a parsed mesh config document. `set` tells which top-level fields the
 * document wrote: proto3 scalars cannot tell "false" from "absent", and absent keeps istiod's default.
 */
export function meshTelemetryFrom(proto: MeshConfigProto, set: ReadonlySet<string>): MeshTelemetry {
  const base = defaultMeshTelemetry();
  const providers = [...base.extensionProviders];
  for (const p of proto.extensionProviders) {
    const i = providers.findIndex((e) => e.name === p.name);
    if (i >= 0) providers[i] = p;
    else providers.push(p);
  }
  const dp = proto.defaultProviders;
  return {
    extensionProviders: providers,
    defaultProviders: {
      metrics: [...(dp?.metrics ?? [])],
      tracing: [...(dp?.tracing ?? [])],
      accessLogging: [...(dp?.accessLogging ?? [])],
    },
    enableTracing: set.has('enableTracing') ? proto.enableTracing : base.enableTracing,
    accessLogFile: proto.accessLogFile,
    accessLogEncoding: proto.accessLogEncoding === MeshConfig_AccessLogEncoding.JSON ? 'JSON' : 'TEXT',
    accessLogFormat: proto.accessLogFormat,
    enableEnvoyAccessLogService: proto.enableEnvoyAccessLogService,
    disableEnvoyListenerLog: proto.disableEnvoyListenerLog,
  };
}

/** The telemetry fields of MeshConfig that meshTelemetryFrom reads. */
export const MESH_TELEMETRY_FIELDS = [
  'extensionProviders',
  'defaultProviders',
  'enableTracing',
  'accessLogFile',
  'accessLogEncoding',
  'accessLogFormat',
  'enableEnvoyAccessLogService',
  'disableEnvoyListenerLog',
] as const;
