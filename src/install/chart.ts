/**
 * A Helm chart directory rendered as Helm v4's engine renders it (pkg/engine), with meshpilot's Go
 * text/template + Sprig engine: every file under templates/ parsed into one set named
 * `<chart>/templates/<file>`, executed with missingkey=zero in Helm's order (deepest paths first,
 * then reverse lexical — so Istio's `zzz_profile.yaml`, which rewrites `.Values` for the files
 * after it, runs first), partials (`_*.tpl`) not executed, and every "<no value>" dropped.
 * The top-level object is shared by the chart's templates, as Helm shares it: a template that
 * `set`s `$.Values` changes what the following ones read.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { decodeYamlLikeGo, parseTemplates } from '../template/index.js';
import { MeshError } from '../util/errors.js';

type GoMap = Record<string, unknown>;

export interface Chart {
  readonly name: string;
  readonly dir: string;
  /** Chart.yaml as Helm's Metadata struct exposes it to templates (`.Chart.Name`, …). */
  readonly metadata: GoMap;
  /** values.yaml, decoded as Helm reads it (sigs.k8s.io/yaml: numbers are float64). */
  readonly defaults: GoMap;
  readonly schema: unknown;
  /** `templates/x.yaml` → text. */
  readonly templates: ReadonlyMap<string, string>;
  /** Other files by chart-relative path (what `.Files.Get` reads). */
  readonly files: ReadonlyMap<string, string>;
}

/** What `helm template` passes as .Capabilities without a cluster (Helm v4.3 built with client-go 1.37). */
const KUBE_VERSION = { Version: 'v1.37.0', Major: '1', Minor: '37', GitVersion: 'v1.37.0' };
const HELM_VERSION = 'v4.3';

function walk(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir).sort()) {
    const full = join(dir, entry);
    // statSync follows symlinks, as Helm's loader does (charts here link to the vendored sources).
    if (statSync(full).isDirectory()) out.push(...walk(full));
    else out.push(full);
  }
  return out;
}

function asMap(v: unknown, what: string): GoMap {
  if (v === null || v === undefined) return {};
  if (typeof v !== 'object' || Array.isArray(v)) throw new MeshError('INVALID_ARGUMENT', `${what}: not a map`);
  return v as GoMap;
}

const METADATA_FIELDS: ReadonlyArray<[string, string, unknown]> = [
  ['APIVersion', 'apiVersion', ''],
  ['Annotations', 'annotations', null],
  ['AppVersion', 'appVersion', ''],
  ['Condition', 'condition', ''],
  ['Dependencies', 'dependencies', []],
  ['Deprecated', 'deprecated', false],
  ['Description', 'description', ''],
  ['Home', 'home', ''],
  ['Icon', 'icon', ''],
  ['Keywords', 'keywords', []],
  ['KubeVersion', 'kubeVersion', ''],
  ['Maintainers', 'maintainers', []],
  ['Name', 'name', ''],
  ['Sources', 'sources', []],
  ['Tags', 'tags', ''],
  ['Type', 'type', ''],
  ['Version', 'version', ''],
];

export function loadChart(dir: string): Chart {
  const chartYaml = asMap(decodeYamlLikeGo(readFileSync(join(dir, 'Chart.yaml'), 'utf8')), `${dir}/Chart.yaml`);
  const metadata: GoMap = { IsRoot: true };
  for (const [field, key, zero] of METADATA_FIELDS) metadata[field] = chartYaml[key] ?? zero;
  const name = String(chartYaml.name ?? '');
  if (name === '') throw new MeshError('INVALID_ARGUMENT', `${dir}/Chart.yaml: no name`);
  const templates = new Map<string, string>();
  const files = new Map<string, string>();
  let defaults: GoMap = {};
  let schema: unknown;
  for (const full of walk(dir)) {
    const rel = relative(dir, full).split(sep).join('/');
    const text = readFileSync(full, 'utf8');
    if (rel.startsWith('templates/')) templates.set(rel, text);
    else if (rel === 'values.yaml') defaults = asMap(decodeYamlLikeGo(text), `${dir}/values.yaml`);
    else if (rel === 'values.schema.json') schema = JSON.parse(text) as unknown;
    else if (rel !== 'Chart.yaml' && !rel.startsWith('charts/')) files.set(rel, text);
  }
  return { name, dir, metadata, defaults, schema, templates, files };
}

/** Helm's engine.Files: the chart's non-template files. */
class Files {
  readonly #files: ReadonlyMap<string, string>;
  constructor(files: ReadonlyMap<string, string>) {
    this.#files = files;
  }
  Get(name: unknown): string {
    return this.#files.get(String(name)) ?? '';
  }
  GetBytes(name: unknown): string {
    return this.Get(name);
  }
  Lines(name: unknown): string[] {
    const text = this.Get(name);
    return text === '' ? [] : text.split('\n');
  }
}

/** Helm's common.VersionSet: `.Capabilities.APIVersions.Has "policy/v1"`. */
class VersionSet {
  Has(v: unknown): boolean {
    return DEFAULT_API_VERSIONS.has(String(v));
  }
}
const DEFAULT_API_VERSIONS = new Set([
  'v1',
  'apps/v1',
  'batch/v1',
  'policy/v1',
  'autoscaling/v2',
  'rbac.authorization.k8s.io/v1',
  'admissionregistration.k8s.io/v1',
  'apiextensions.k8s.io/v1',
  'networking.k8s.io/v1',
  'coordination.k8s.io/v1',
  'discovery.k8s.io/v1',
]);

export interface ReleaseOptions {
  readonly name: string;
  readonly namespace: string;
  readonly isUpgrade?: boolean;
}

/** Helm's sortTemplates: deeper paths first; at equal depth, reverse lexical order. */
export function helmTemplateOrder(names: readonly string[]): string[] {
  const depth = (s: string): number => s.split('/').length;
  return [...names].sort((a, b) => depth(b) - depth(a) || (a < b ? 1 : a > b ? -1 : 0));
}

/**
 * Renders every template of the chart over `values` (already coalesced and validated) and returns
 * each output file by its `<chart>/templates/<file>` name.
 */
export function renderChart(chart: Chart, values: GoMap, release: ReleaseOptions): Map<string, string> {
  const named = [...chart.templates].map(([rel, text]) => ({ name: `${chart.name}/${rel}`, text }));
  const set = parseTemplates(named, { missingKey: 'zero' });
  const top: GoMap = {
    Chart: chart.metadata,
    Files: new Files(chart.files),
    Release: {
      IsInstall: !release.isUpgrade,
      IsUpgrade: release.isUpgrade === true,
      Name: release.name,
      Namespace: release.namespace,
      Revision: 1n,
      Service: 'Helm',
    },
    Capabilities: { KubeVersion: { ...KUBE_VERSION }, APIVersions: new VersionSet(), HelmVersion: { Version: HELM_VERSION } },
    Values: values,
    Subcharts: {},
  };
  const out = new Map<string, string>();
  for (const name of helmTemplateOrder(named.map((t) => t.name))) {
    if ((name.split('/').pop() ?? '').startsWith('_')) continue;
    top.Template = { Name: name, BasePath: `${chart.name}/templates` };
    out.set(name, set.execute(name, top).replaceAll('<no value>', ''));
  }
  return out;
}
