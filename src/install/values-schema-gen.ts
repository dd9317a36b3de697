/**
 * Generates values.schema.json for the charts whose Istio original ships none (base, meshpilot,
 * cni), from the chart's own defaults, so a typo in a key or a wrong type is an error as in
 * Istio's gateway chart (whose hand-written schema is kept). Rules:
 *   - a key's type is its default's (integers: integer ≥ 0; strings, booleans; lists: array);
 *   - a map default is closed (additionalProperties: false) unless its key is one of OPEN_KEYS
 *     (Kubernetes objects and free-form maps: resources, annotations, meshConfig, env, …);
 *   - a null default and keys in EXTRA accept anything of their type;
 *   - `global` is the union of every chart's globals, so one `--set global.x=…` is valid for all;
 *   - `profile`, `revision`, `enabled` and the chart's legacy prefix (`pilot`, `cni`) as Istio reads them.
 * test/e2e/install-render.test.ts checks the committed files equal this output
 * (UPDATE_SCHEMAS=1 rewrites them).
 */
import { isMap, mergeMaps, type GoMap } from './values.js';

/** Free-form maps (Kubernetes objects, label/annotation maps, MeshConfig). */
const OPEN_KEYS = new Set([
  'meshConfig',
  'resources',
  'defaultResources',
  'annotations',
  'podAnnotations',
  'serviceAnnotations',
  'serviceAccountAnnotations',
  'deploymentAnnotations',
  'sidecarInjectorWebhookAnnotations',
  'labels',
  'podLabels',
  'deploymentLabels',
  'daemonSetLabels',
  'env',
  'nodeSelector',
  'affinity',
  'seccompProfile',
  'seLinuxOptions',
  'securityContext',
  'meshNetworks',
  'autoscaleBehavior',
  'updateStrategy',
  'memory',
  'templates',
  'injectedAnnotations',
  'gatewayClasses',
  'tracer',
]);

/** Keys the charts' templates read that values.yaml does not set (Istio's undocumented knobs). */
type Extra = Readonly<Record<string, GoMap>>;
const EXTRA: Readonly<Record<string, Readonly<Record<string, Extra>>>> = {
  base: {
    base: { validationFailurePolicy: { type: 'string', enum: ['Fail', 'Ignore'] } },
  },
  meshpilot: {
    '': {
      terminationMessagePolicy: { type: 'string' },
      trafficDistribution: { type: 'string' },
      crlConfigMapName: { type: 'string' },
    },
  },
  cni: {},
};

const GLOBAL_EXTRA: Extra = {
  trustBundleName: { type: 'string' },
};

function inferred(key: string, v: unknown): GoMap {
  if (v === null || v === undefined) return {};
  if (typeof v === 'boolean') return { type: 'boolean' };
  if (typeof v === 'string') return { type: 'string' };
  if (typeof v === 'number')
    return Number.isInteger(v) && key !== 'traceSampling' ? { type: 'integer', minimum: 0 } : { type: 'number', minimum: 0 };
  if (Array.isArray(v)) return { type: 'array' };
  if (isMap(v)) {
    if (OPEN_KEYS.has(key)) return { type: 'object' };
    return closedObject(v);
  }
  return {};
}

function closedObject(m: GoMap, extra: Extra = {}): GoMap {
  const properties: GoMap = {};
  for (const k of Object.keys(m).sort()) properties[k] = inferred(k, m[k]);
  for (const [k, s] of Object.entries(extra)) properties[k] = s;
  return { type: 'object', additionalProperties: false, properties };
}

/** Istio's charts keep their defaults under this key (zzz_profile.yaml merges profile and user values over it). */
export const DEFAULTS_KEY = '_internal_defaults_do_not_set';

function defaultsOf(values: GoMap): GoMap {
  const d = values[DEFAULTS_KEY];
  return isMap(d) ? d : {};
}

/** The union of the `global` defaults of every chart. */
export function unionGlobals(allValues: readonly GoMap[]): GoMap {
  let g: GoMap = {};
  for (const v of allValues) {
    const d = defaultsOf(v).global;
    if (isMap(d)) g = mergeMaps(g, d);
  }
  return g;
}

export function generateSchema(chart: 'base' | 'meshpilot' | 'cni', values: GoMap, globals: GoMap): GoMap {
  const defaults = { ...defaultsOf(values) };
  delete defaults.global;
  const extra: Readonly<Record<string, Extra>> = EXTRA[chart] ?? {};
  const def = closedObject(defaults, extra[''] ?? {});
  const props = def.properties as GoMap;
  for (const [k, more] of Object.entries(extra)) {
    if (k === '') continue;
    const target = props[k];
    if (isMap(target) && isMap(target.properties)) Object.assign(target.properties, more);
  }
  props.global = closedObject(globals, GLOBAL_EXTRA);
  props[DEFAULTS_KEY] = { type: 'object' };
  props.profile = {
    type: 'string',
    description: 'A profile of manifests/profiles (files/profile-<name>.yaml), applied over the defaults.',
  };
  props.revision = { type: 'string' };
  props.enabled = { type: 'boolean', description: 'Whether meshctl installs this chart; the chart itself does not read it.' };
  if (chart === 'meshpilot')
    props.pilot = { $ref: '#/$defs/values', description: "Istio's legacy prefix: pilot.x is x (zzy_descope_legacy.yaml)." };
  if (chart === 'cni') props.cni = { $ref: '#/$defs/values', description: "Istio's legacy prefix: cni.x is x (zzy_descope_legacy.yaml)." };
  return { $schema: 'http://json-schema.org/schema#', $defs: { values: def }, $ref: '#/$defs/values' };
}
