/**
 * MeshConfig as Istio users write it: the `mesh` key of the `istio` ConfigMap, or a `--meshConfig`
 * file. The whole document is checked against Istio's MeshConfig proto (istio/api
 * mesh/v1alpha1/config.proto, proto3 JSON rules: unknown fields and wrong types are errors, as
 * istiod's strict ApplyYAML), then the fields meshpilot uses are taken over istiod's defaults.
 * Fields it does not use yet are accepted and listed, so a caller can say they are ignored.
 */
import { parseBoundedYaml } from '../parse-limits.js';
import { fromJson, type JsonValue } from '@bufbuild/protobuf';
import type { LabelSelector } from '../labels.js';
import { MeshConfig_OutboundTrafficPolicy_Mode, MeshConfigSchema } from '../../gen/mesh/v1alpha1/config_pb.js';
import { MeshError, errorMessage } from '../../util/errors.js';
import { defaultMeshConfig, type MeshConfig } from './mesh-config.js';
import { MESH_TELEMETRY_FIELDS, meshTelemetryFrom } from './mesh-telemetry.js';
import { meshLabelSelector, serviceEntryVisibilityFrom, type ServiceEntryVisibility } from './service-entry-visibility.js';

/** What a mesh config document sets. */
export interface MeshConfigFile {
  readonly mesh: MeshConfig;
  /** istiod's discoverySelectors (empty: every namespace). */
  readonly discoverySelectors: readonly LabelSelector[];
  /** Top-level fields the document sets that meshpilot does not act on yet. */
  readonly ignoredFields: readonly string[];
}

/** The MeshConfig fields meshpilot reads; everything else is valid but ignored. */
const USED_FIELDS = new Set<string>([
  'trustDomain',
  'rootNamespace',
  'connectTimeout',
  'outboundTrafficPolicy',
  'discoverySelectors',
  'enableAutoMtls',
  'serviceSettings',
  'serviceEntryVisibility',
  ...MESH_TELEMETRY_FIELDS,
]);

/**
 * Parses one mesh config document (YAML or JSON). `origin` names where it came from in errors
 * (`--meshConfig /etc/istio/mesh.yaml`, `ConfigMap istio-system/istio key mesh`). `domain` is the
 * cluster domain (--domain), which MeshConfig does not carry.
 */
export function parseMeshConfig(text: string, origin: string, domain: string): MeshConfigFile {
  const doc: unknown = parseBoundedYaml(text, origin) ?? {};
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc))
    throw new MeshError('INVALID_ARGUMENT', `${origin}: a mesh config is a mapping of MeshConfig fields`);
  let proto;
  try {
    proto = fromJson(MeshConfigSchema, doc as JsonValue);
  } catch (err) {
    // protobuf-es does not say which field failed: find the top-level one that does.
    const field = Object.entries(doc).find(([k, v]) => {
      try {
        fromJson(MeshConfigSchema, { [k]: v } as JsonValue);
        return false;
      } catch {
        return true;
      }
    })?.[0];
    throw new MeshError('INVALID_ARGUMENT', `${origin}${field !== undefined ? `: field ${field}` : ''}: ${errorMessage(err)}`);
  }
  let selectors: LabelSelector[];
  let serviceEntryVisibility: ServiceEntryVisibility | undefined;
  try {
    selectors = proto.discoverySelectors.map((sel, i) => meshLabelSelector(sel, `discoverySelectors[${i}]`));
    serviceEntryVisibility = proto.serviceEntryVisibility && serviceEntryVisibilityFrom(proto.serviceEntryVisibility);
  } catch (err) {
    throw new MeshError('INVALID_ARGUMENT', `${origin}: ${errorMessage(err)}`);
  }
  const timeout = proto.connectTimeout;
  const timeoutMs = timeout ? Number(timeout.seconds) * 1000 + Math.round(timeout.nanos / 1e6) : undefined;
  if (timeoutMs !== undefined && timeoutMs <= 0) throw new MeshError('INVALID_ARGUMENT', `${origin}: connectTimeout must be more than 0`);
  const mode = proto.outboundTrafficPolicy?.mode;
  const mesh = defaultMeshConfig({
    domain,
    ...(proto.trustDomain !== '' ? { trustDomain: proto.trustDomain } : {}),
    ...(proto.rootNamespace !== '' ? { rootNamespace: proto.rootNamespace } : {}),
    ...(timeoutMs !== undefined ? { connectTimeoutMs: timeoutMs } : {}),
    ...(mode === MeshConfig_OutboundTrafficPolicy_Mode.REGISTRY_ONLY ? { outboundTrafficPolicy: 'REGISTRY_ONLY' as const } : {}),
    telemetry: meshTelemetryFrom(proto, new Set(Object.keys(doc))),
    ...(proto.enableAutoMtls !== undefined ? { enableAutoMtls: proto.enableAutoMtls } : {}),
    ...(proto.serviceSettings.length > 0
      ? { serviceSettings: proto.serviceSettings.map((s) => ({ hosts: [...s.hosts], clusterLocal: s.settings?.clusterLocal ?? false })) }
      : {}),
    // Read for the default cluster-local hosts only; the rest of defaultConfig is the injector's.
    ...(proto.defaultConfig?.discoveryAddress ? { discoveryAddress: proto.defaultConfig.discoveryAddress } : {}),
    ...(serviceEntryVisibility ? { serviceEntryVisibility } : {}),
  });
  const ignoredFields = Object.keys(doc)
    .filter((k) => !USED_FIELDS.has(k))
    // Sidecars keep exportTo: only ambient honours serviceEntryVisibility so far.
    .concat(serviceEntryVisibility?.applyToSidecars === true ? ['serviceEntryVisibility.applyToSidecars'] : [])
    .sort();
  return { mesh, discoverySelectors: selectors, ignoredFields };
}
