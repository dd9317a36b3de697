/**
 * What `meshctl install` / `manifest generate` install: the Helm charts in manifests/charts,
 * rendered here as `helm template` renders them (chart.ts, values.ts, values-schema.ts,
 * manifests.ts). The charts are the only source; this module only decides, like istioctl, which
 * releases a profile installs and which of the user's values go to which chart (plan.ts).
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseMeshConfig } from '../config/index.js';
import { marshalYaml, TemplateError } from '../template/index.js';
import { loadChart, renderChart, type Chart } from './chart.js';
import { sortManifests } from './manifests.js';
import { planInstall, ValuesError, type ReleasePlan } from './plan.js';
import { SchemaValidator } from './values-schema.js';
import { coalesceValues, userValues, type GoMap } from './values.js';
import { DEFAULT_DOMAIN_SUFFIX } from '../config/constants.js';
import { errorCodeOf, MeshError } from '../util/errors.js';

export { ValuesError, planInstall, PROFILES, type ReleasePlan } from './plan.js';

export interface InstallRenderOptions {
  /** default | demo | minimal | remote | empty (`--set profile=demo` is accepted too). */
  profile?: string;
  /** `--set a.b=c`, in order, Helm's strvals syntax. */
  sets: readonly string[];
  /** `-f overlay.yaml`, in order: files win over the profile, --set wins over files. */
  valuesFiles: readonly string[];
  /** `--revision R`: Istio's `revision` value. */
  revision?: string;
  /** istio-system by default. */
  namespace?: string;
  /** Default: manifests/charts of this package. */
  chartsDir?: string;
}

export interface RenderedObject {
  chart: string;
  /** The Helm release the object belongs to (istio-base, istiod, istio-ingressgateway, …). */
  release: string;
  /** `<chart>/templates/<file>`, as `helm template` prints after `# Source:`. */
  template: string;
  /** The document as the chart rendered it (comments and layout kept), what manifest generate prints. */
  manifest?: string;
  object: {
    apiVersion: string;
    kind: string;
    metadata: { name: string; namespace?: string; labels?: Record<string, string>; [k: string]: unknown };
    [k: string]: unknown;
  };
}

/** manifests/charts of the package: two levels up from src/install; from dist/src/install, the copy a packed package carries (dist/manifests, scripts/stage-package-data.ts), else the repository's. */
export function defaultChartsDir(): string {
  const candidates = ['../../manifests/charts', '../../../manifests/charts'].map((rel) => fileURLToPath(new URL(rel, import.meta.url)));
  return candidates.find((dir) => existsSync(dir)) ?? (candidates[0] as string);
}

/** One release's `.Values` as Helm builds them; ValuesError when the chart's schema refuses them. */
export function releaseValues(chart: Chart, plan: ReleasePlan): GoMap {
  let user: GoMap;
  try {
    user = userValues(plan.valuesDocs, plan.sets);
  } catch (err) {
    throw new ValuesError('--set', `${(err as Error).message}`);
  }
  const values = coalesceValues(chart.defaults, user);
  if (chart.schema !== undefined) {
    const violation = new SchemaValidator(chart.schema).validate(values)[0];
    if (violation) throw new ValuesError(plan.keyPrefix + violation.key, `${violation.message} (chart ${chart.name}, values.schema.json)`);
  }
  return values;
}

function asRendered(plan: ReleasePlan, source: string, text: string, object: GoMap): RenderedObject {
  const meta = object.metadata;
  const name = typeof meta === 'object' && meta !== null ? (meta as GoMap).name : undefined;
  if (typeof object.apiVersion !== 'string' || typeof object.kind !== 'string' || typeof name !== 'string') {
    throw new MeshError(
      'INVALID_ARGUMENT',
      `${source} (release ${plan.release}): a rendered object lacks apiVersion, kind or metadata.name`,
    );
  }
  return { chart: plan.chart, release: plan.release, template: source, manifest: text, object: object as RenderedObject['object'] };
}

/** Renders one release over values already built by releaseValues. */
export function renderRelease(chart: Chart, plan: ReleasePlan, values: GoMap = releaseValues(chart, plan)): RenderedObject[] {
  let files: Map<string, string>;
  try {
    files = renderChart(chart, values, { name: plan.release, namespace: plan.namespace });
  } catch (err) {
    if (err instanceof TemplateError && err.userMessage !== undefined) {
      throw new MeshError('INVALID_ARGUMENT', `chart ${chart.name}: execution error at (${err.location ?? '?'}): ${err.userMessage}`, {
        cause: err,
      });
    }
    throw new MeshError(errorCodeOf(err), `chart ${chart.name}: ${(err as Error).message}`, { cause: err });
  }
  return sortManifests(files).map((d) => asRendered(plan, d.source, d.text, d.object));
}

/**
 * meshpilot refuses a mesh config with a field MeshConfig does not have (and keeps its defaults);
 * Helm cannot know that (meshConfig is free-form in the chart), so meshctl checks the rendered
 * ConfigMap as meshpilot will read it and names the `meshConfig.<field>` value.
 */
function checkMeshConfig(objects: readonly RenderedObject[]): void {
  for (const o of objects) {
    if (o.template !== 'meshpilot/templates/configmap.yaml' || o.object.kind !== 'ConfigMap') continue;
    const text = (o.object.data as Record<string, unknown> | undefined)?.mesh;
    if (typeof text !== 'string') continue;
    try {
      parseMeshConfig(text, `ConfigMap ${o.object.metadata.name} key mesh`, DEFAULT_DOMAIN_SUFFIX);
    } catch (err) {
      const field = /: field (\w+):/.exec((err as Error).message)?.[1];
      throw new ValuesError(
        field === undefined ? 'meshConfig' : `meshConfig.${field}`,
        `meshpilot would refuse the mesh config: ${(err as Error).message}`,
      );
    }
  }
}

export async function renderInstall(opts: InstallRenderOptions): Promise<{ objects: RenderedObject[]; values: Record<string, unknown> }> {
  const chartsDir = opts.chartsDir ?? defaultChartsDir();
  const { releases, values } = await planInstall(opts);
  const charts = new Map<string, Chart>();
  const chartOf = (name: string): Chart => {
    const loaded = charts.get(name) ?? loadChart(`${chartsDir}/${name}`);
    charts.set(name, loaded);
    return loaded;
  };
  // Every release's values are checked before anything is rendered: a bad key fails at once.
  const prepared = releases.map((plan) => ({ plan, chart: chartOf(plan.chart), values: releaseValues(chartOf(plan.chart), plan) }));
  const objects = prepared.flatMap(({ plan, chart, values: v }) => renderRelease(chart, plan, v));
  checkMeshConfig(objects);
  return { objects, values };
}

/**
 * What `meshctl manifest generate` prints: helm template's layout (`---`, `# Source:`, the document
 * as rendered); an object built elsewhere (no `manifest`) is printed as sigs.k8s.io/yaml would.
 */
export function formatManifest(objects: readonly RenderedObject[]): string {
  return objects.map((o) => `---\n# Source: ${o.template}\n${(o.manifest ?? marshalYaml(o.object)).trimEnd()}\n`).join('');
}
