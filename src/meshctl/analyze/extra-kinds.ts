/**
 * Istio kinds istioctl analyzes but meshpilot does not serve (the config parser skips them):
 * EnvoyFilter and Telemetry. Their specs are decoded with the same protobuf-es schemas and field
 * paths as served kinds, so a bad one becomes a SchemaValidationError like any other.
 */
import type { DescMessage } from '@bufbuild/protobuf';
import { type ConfigError, type ConfigOrigin, splitApiVersion, Issues, decodeSpec } from '../../config/index.js';
import { EnvoyFilterSchema, type EnvoyFilter } from '../../gen/networking/v1alpha3/envoy_filter_pb.js';
import { TelemetrySchema, type Telemetry } from '../../gen/telemetry/v1alpha1/telemetry_pb.js';
import type { AnalysisObject, InvalidObject, ObjectWarnings, ResourceRef } from './model.js';

interface ExtraKind {
  readonly group: string;
  readonly versions: readonly string[];
  readonly plural: string;
  readonly schema: DescMessage;
}

export const EXTRA_KINDS = {
  EnvoyFilter: { group: 'networking.istio.io', versions: ['v1alpha3'], plural: 'envoyfilters', schema: EnvoyFilterSchema },
  Telemetry: { group: 'telemetry.istio.io', versions: ['v1', 'v1alpha1'], plural: 'telemetries', schema: TelemetrySchema },
} as const satisfies Record<string, ExtraKind>;

export type ExtraKindName = keyof typeof EXTRA_KINDS;

export interface ExtraObjects {
  readonly envoyFilters: AnalysisObject<EnvoyFilter>[];
  readonly telemetries: AnalysisObject<Telemetry>[];
  readonly invalid: InvalidObject[];
  readonly warnings: ObjectWarnings[];
}

export const emptyExtras = (): ExtraObjects => ({ envoyFilters: [], telemetries: [], invalid: [], warnings: [] });

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The extra kind a document is (by apiVersion and kind), or undefined. */
export function extraKindOf(doc: Record<string, unknown>): ExtraKindName | undefined {
  const kind = doc.kind;
  if (kind !== 'EnvoyFilter' && kind !== 'Telemetry') return undefined;
  const info: ExtraKind = EXTRA_KINDS[kind];
  if (typeof doc.apiVersion !== 'string') return undefined;
  const { group, version } = splitApiVersion(doc.apiVersion);
  return group === info.group && info.versions.includes(version) ? kind : undefined;
}

/**
 * Adds a document of an extra kind to `out`: decoded, or as an invalid object naming each bad
 * field. `origin` is the file position, or undefined for a cluster object.
 */
export function addExtraObject(
  out: ExtraObjects,
  kind: ExtraKindName,
  doc: Record<string, unknown>,
  namespace: string,
  origin: ConfigOrigin | undefined,
): void {
  const meta = isRecord(doc.metadata) ? doc.metadata : {};
  const name = typeof meta.name === 'string' ? meta.name : '';
  const ref: ResourceRef = origin ? { kind, namespace, name, origin } : { kind, namespace, name };
  const issues = new Issues();
  if (name === '') issues.add('metadata.name', 'name is required');
  const spec = doc.spec ?? {};
  const decoded = isRecord(spec) ? decodeSpec<EnvoyFilter | Telemetry>(EXTRA_KINDS[kind].schema, spec, 'spec', issues) : undefined;
  if (!isRecord(spec)) issues.add('spec', 'spec must be an object');
  if (issues.count > 0 || decoded?.value === undefined) {
    const file = origin?.file ?? `${kind} ${namespace}/${name}`;
    const errors = issues.list.map((i): ConfigError => ({
      origin: origin ?? { file },
      kind,
      namespace,
      name,
      path: i.path,
      message: i.message,
    }));
    out.invalid.push({ ref, errors });
    return;
  }
  if (kind === 'EnvoyFilter') out.envoyFilters.push({ ref, spec: decoded.value as EnvoyFilter });
  else out.telemetries.push({ ref, spec: decoded.value as Telemetry });
}
