/**
 * /validate: istiod's validation webhook ("validation.istio.io"). An Istio object being created or
 * updated goes through the same validation as the config sources (`validateObject`); a denial
 * carries istiod's message shape, `configuration is invalid: <reasons>`, which kubectl prints as
 * `admission webhook "validation.istio.io" denied the request: configuration is invalid: …`.
 * An admitted object carries its validation warnings (deprecated fields, settings without effect), as istiod returns them.
 *
 * As istiod: only CREATE and UPDATE are checked (DELETE and CONNECT are allowed); the object's own
 * apiVersion/kind decide its schema, whatever version it is written in; a type istiod does not know
 * is denied as `unrecognized type <group>/<version>, Kind=<kind>`; top-level fields other than
 * apiVersion, kind, metadata, spec and status are refused. Istio kinds meshpilot has no schema for
 * (TrafficExtension) are admitted with a warning saying they were not checked:
 * istiod would validate them, and refusing them would block users' existing YAML.
 */
import { Counter, type Registry } from 'prom-client';
import { type ConfigError, KINDS, splitApiVersion, type KindInfo, type RawObject, validateObjectWithWarnings } from '../config/index.js';
import type { Logger } from '../util/log.js';
import type { AdmissionHandler, AdmissionRequest, AdmissionResponse } from './admission.js';

/** Istio kinds istiod validates, by group: those meshpilot has no schema for (not in KINDS) are admitted unchecked. */
const UNSERVED_ISTIO_KINDS: Readonly<Record<string, readonly string[]>> = {
  'networking.istio.io': ['ProxyConfig', 'WorkloadGroup'],
  'telemetry.istio.io': ['Telemetry'],
  'extensions.istio.io': ['WasmPlugin', 'TrafficExtension'],
};

/** istiod's checkFields: the top-level fields an Istio object may have. */
const TOP_LEVEL_FIELDS: ReadonlySet<string> = new Set(['apiVersion', 'kind', 'metadata', 'spec', 'status']);

export interface ValidationHandlerOptions {
  readonly logger: Logger;
  /** Where istiod's galley_validation_passed / galley_validation_failed counters go (none: not counted). */
  readonly registry?: Registry;
}

/** istiod's reason labels. */
type FailReason = 'unsupported_operation' | 'yaml_decode_error' | 'unknown_type' | 'invalid_resource';

function validationMetrics(registry: Registry | undefined): {
  passed(r: AdmissionRequest): void;
  failed(r: AdmissionRequest, reason: FailReason): void;
} {
  if (!registry) return { passed: () => {}, failed: () => {} };
  const registers = [registry];
  const labelNames = ['group', 'version', 'resource'] as const;
  const passed = new Counter({ name: 'galley_validation_passed', help: 'Resource is valid', labelNames, registers });
  const failed = new Counter({
    name: 'galley_validation_failed',
    help: 'Resource validation failed',
    labelNames: [...labelNames, 'reason'],
    registers,
  });
  const labels = (r: AdmissionRequest): Record<(typeof labelNames)[number], string> => ({
    group: r.resource.group,
    version: r.resource.version,
    resource: r.resource.resource,
  });
  return { passed: (r) => passed.inc(labels(r)), failed: (r, reason) => failed.inc({ ...labels(r), reason }) };
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

const deny = (uid: string, message: string): AdmissionResponse => ({ uid, allowed: false, status: { message } });

/** Go's schema.GroupVersionKind String(), which istiod prints for unknown types. */
const gvkString = (group: string, version: string, kind: string): string => `${group === '' ? '' : `${group}/`}${version}, Kind=${kind}`;

/** The served kind for an object's group and kind (any version: istiod looks types up by group and kind). */
function servedKind(group: string, kind: string): KindInfo | undefined {
  const info = (KINDS as Record<string, KindInfo | undefined>)[kind];
  // Core Secrets are validated as gateway credentials in directory mode only, and Gateway API
  // kinds by their CRD schema on the API server: neither is an Istio type (istiod's webhook refuses them).
  return info && info.group === group && group.endsWith('.istio.io') ? info : undefined;
}

/** `<path>: <message>` for each problem, in order, joined as one line. */
export function formatValidationErrors(errors: readonly ConfigError[]): string {
  return errors.map((e) => (e.path ? `${e.path}: ${e.message}` : e.message)).join('; ');
}

export function validationHandler(opts: ValidationHandlerOptions): AdmissionHandler {
  const log = opts.logger;
  const metrics = validationMetrics(opts.registry);
  return (req: AdmissionRequest): AdmissionResponse => {
    if (req.operation !== 'CREATE' && req.operation !== 'UPDATE') {
      metrics.failed(req, 'unsupported_operation'); // istiod counts these so, and allows them
      return { uid: req.uid, allowed: true };
    }
    const obj = req.object;
    if (!isRecord(obj) || typeof obj.apiVersion !== 'string' || typeof obj.kind !== 'string') {
      metrics.failed(req, 'yaml_decode_error');
      return deny(
        req.uid,
        `cannot decode configuration: ${isRecord(obj) ? 'apiVersion and kind must be strings' : 'request.object is not a JSON object'}`,
      );
    }
    const { group, version } = splitApiVersion(obj.apiVersion);
    const kind = obj.kind;
    const where = `${kind} ${req.namespace ?? ''}${req.namespace ? '/' : ''}${req.name ?? nameOf(obj) ?? '(unnamed)'}`;
    const info = servedKind(group, kind);
    if (!info) {
      if (UNSERVED_ISTIO_KINDS[group]?.includes(kind)) {
        log.debug('admitted an Istio kind meshpilot does not validate', { object: where, dryRun: req.dryRun === true });
        metrics.passed(req);
        return { uid: req.uid, allowed: true, warnings: [`meshpilot does not validate ${kind} (${group}); it was admitted unchecked`] };
      }
      log.info('unrecognized type', { type: gvkString(group, version, kind), object: where, dryRun: req.dryRun === true });
      metrics.failed(req, 'unknown_type');
      return deny(req.uid, `unrecognized type ${gvkString(group, version, kind)}`);
    }
    const doc = asValidatable(obj, info, version, req);
    // istiod answers an allowed object with its validation warnings (kubectl prints them).
    const { result, warnings } = validateObjectWithWarnings(
      doc,
      { file: `admission ${where}` },
      req.namespace !== undefined ? { defaultNamespace: req.namespace } : {},
    );
    if (!result.ok) {
      const message = `configuration is invalid: ${formatValidationErrors(result.errors)}`;
      log.info('configuration is invalid', { object: where, operation: req.operation, dryRun: req.dryRun === true, reason: message });
      metrics.failed(req, 'invalid_resource');
      return deny(req.uid, message);
    }
    const extra = Object.keys(obj).find((k) => !TOP_LEVEL_FIELDS.has(k));
    if (extra !== undefined) {
      const message = `unknown field ${JSON.stringify(extra)} on ${kind} resource ${req.namespace ?? ''}/${nameOf(obj) ?? req.name ?? ''}`;
      log.info('configuration is invalid', { object: where, reason: message });
      metrics.failed(req, 'invalid_resource');
      return deny(req.uid, message);
    }
    metrics.passed(req);
    return warnings.length > 0
      ? { uid: req.uid, allowed: true, warnings: warnings.map((w) => w.message) }
      : { uid: req.uid, allowed: true };
  };
}

function nameOf(obj: Record<string, unknown>): string | undefined {
  const meta = obj.metadata;
  return isRecord(meta) && typeof meta.name === 'string' && meta.name !== '' ? meta.name : undefined;
}

/**
 * The object as validateObject reads it. Version: any version of a served kind maps onto one
 * schema (istiod ignores it too). Name: a CREATE with generateName may reach admission before the
 * name is generated; validate the name the API server will produce (prefix + 5 characters).
 */
function asValidatable(obj: Record<string, unknown>, info: KindInfo, version: string, req: AdmissionRequest): RawObject {
  const apiVersion = info.versions.includes(version) ? obj.apiVersion : `${info.group}/${info.versions[0] ?? version}`;
  const meta = obj.metadata;
  if (!isRecord(meta) || nameOf(obj) !== undefined) return { ...obj, apiVersion };
  const generated =
    req.name ?? (typeof meta.generateName === 'string' && meta.generateName !== '' ? `${meta.generateName}xxxxx` : undefined);
  return { ...obj, apiVersion, metadata: generated !== undefined ? { ...meta, name: generated } : meta };
}
