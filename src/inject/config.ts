/**
 * The injector's configuration in Istio's format: ConfigMap `istio-sidecar-injector` in the system
 * namespace, key `config` (YAML: policy, defaultTemplates, templates, aliases, selectors,
 * injectedAnnotations — istiod's inject.Config) and key `values` (the Helm values the templates
 * see as `.Values`, JSON as the chart writes it, YAML accepted). When there is no ConfigMap,
 * meshpilot uses Istio's own templates and chart defaults, vendored in ./templates (see SOURCE.md).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_PARSE_LIMITS, parseBoundedYaml, type LabelSelector, type LabelSelectorRequirement } from '../config/index.js';
import { MeshError } from '../util/errors.js';
import type { PolicyConfig } from './policy.js';

export interface InjectorConfig extends PolicyConfig {
  /** Templates run when the pod does not name its own (`inject.istio.io/templates`). */
  readonly defaultTemplates: readonly string[];
  /** Template name → Go template text. */
  readonly templates: Readonly<Record<string, string>>;
  /** A name that stands for several templates (not expanded recursively). */
  readonly aliases: Readonly<Record<string, readonly string[]>>;
  /** Added to every injected pod (istiod: primarily for PSP annotations). */
  readonly injectedAnnotations: Readonly<Record<string, string>>;
  /** Keys of `config` that istiod does not read either (e.g. the chart's legacy `template`). */
  readonly ignoredKeys: readonly string[];
}

/** `.Values`: a JSON object; numbers are Go float64s as in istiod's map[string]any. */
export type Values = Readonly<Record<string, unknown>>;

const CONFIG_KEYS = new Set([
  'policy',
  'defaultTemplates',
  'templates',
  'aliases',
  'neverInjectSelector',
  'alwaysInjectSelector',
  'injectedAnnotations',
]);
const OPERATORS = new Set(['In', 'NotIn', 'Exists', 'DoesNotExist']);

function fail(origin: string, what: string): never {
  throw new MeshError('INVALID_ARGUMENT', `${origin}: ${what}`);
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function stringMap(v: unknown, origin: string, field: string): Record<string, string> {
  if (v === undefined || v === null) return {};
  if (!isRecord(v)) fail(origin, `${field} must be a map of strings`);
  const out: Record<string, string> = {};
  for (const [k, e] of Object.entries(v)) {
    if (typeof e !== 'string') fail(origin, `${field}.${k} must be a string, not ${JSON.stringify(e)}`);
    out[k] = e;
  }
  return out;
}

function stringList(v: unknown, origin: string, field: string): string[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || !v.every((e) => typeof e === 'string')) fail(origin, `${field} must be a list of strings`);
  return v as string[];
}

function selectors(v: unknown, origin: string, field: string): LabelSelector[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) fail(origin, `${field} must be a list of label selectors`);
  return v.map((s: unknown, i): LabelSelector => {
    const at = `${field}[${i}]`;
    if (!isRecord(s)) fail(origin, `${at} must be a label selector (matchLabels, matchExpressions)`);
    const matchLabels = stringMap(s.matchLabels, origin, `${at}.matchLabels`);
    const exprs = s.matchExpressions ?? [];
    if (!Array.isArray(exprs)) fail(origin, `${at}.matchExpressions must be a list`);
    const matchExpressions = exprs.map((r: unknown, j): LabelSelectorRequirement => {
      const rat = `${at}.matchExpressions[${j}]`;
      if (!isRecord(r) || typeof r.key !== 'string') fail(origin, `${rat} needs a key`);
      if (typeof r.operator !== 'string' || !OPERATORS.has(r.operator))
        fail(origin, `${rat}.operator ${JSON.stringify(r.operator)} is not In, NotIn, Exists or DoesNotExist`);
      const values = stringList(r.values, origin, `${rat}.values`);
      if ((r.operator === 'In' || r.operator === 'NotIn') && values.length === 0)
        fail(origin, `${rat}: operator ${r.operator} needs values`);
      return { key: r.key, operator: r.operator as LabelSelectorRequirement['operator'], values };
    });
    return { matchLabels, matchExpressions };
  });
}

/** Parses the `config` key. `origin` names the source in errors, e.g. `ConfigMap istio-system/istio-sidecar-injector key config`. */
export function parseInjectorConfig(text: string, origin: string): InjectorConfig {
  const doc = parseBoundedYaml(text, origin, DEFAULT_PARSE_LIMITS, { version: '1.1' }) ?? {};
  if (!isRecord(doc)) fail(origin, 'the injector config is a mapping (policy, templates, …)');
  const templates = stringMap(doc.templates, origin, 'templates');
  const aliasesIn = doc.aliases ?? {};
  if (!isRecord(aliasesIn)) fail(origin, 'aliases must be a map of template name lists');
  const aliases: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(aliasesIn)) aliases[k] = stringList(v, origin, `aliases.${k}`);
  const defaults = stringList(doc.defaultTemplates, origin, 'defaultTemplates');
  const policy = doc.policy ?? '';
  if (typeof policy !== 'string') fail(origin, `policy must be "enabled" or "disabled", not ${JSON.stringify(policy)}`);
  return {
    policy,
    defaultTemplates: defaults.length > 0 ? defaults : ['sidecar'],
    templates,
    aliases,
    neverInjectSelector: selectors(doc.neverInjectSelector, origin, 'neverInjectSelector'),
    alwaysInjectSelector: selectors(doc.alwaysInjectSelector, origin, 'alwaysInjectSelector'),
    injectedAnnotations: stringMap(doc.injectedAnnotations, origin, 'injectedAnnotations'),
    ignoredKeys: Object.keys(doc)
      .filter((k) => !CONFIG_KEYS.has(k))
      .sort(),
  };
}

/** Parses the `values` key (JSON as the chart writes it; YAML too, as istiod's yaml.Unmarshal). */
export function parseInjectorValues(text: string, origin: string): Values {
  const doc = parseBoundedYaml(text, origin, DEFAULT_PARSE_LIMITS, { version: '1.1' }) ?? {};
  if (!isRecord(doc)) fail(origin, 'values must be an object of Helm values (global, sidecarInjectorWebhook, …)');
  return doc;
}

/** The vendored template and values files (src/inject/templates), found from this module or the package root. */
export function builtinTemplatesDir(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const candidates = [path.join(here, 'templates'), path.resolve(here, '../../../src/inject/templates')];
  const found = candidates.find((d) => existsSync(path.join(d, 'injection-template.yaml')));
  if (found === undefined)
    throw new MeshError('NOT_FOUND', `Istio's injection templates are not installed: looked in ${candidates.join(', ')}`);
  return found;
}

/** The chart's `_internal_defaults_do_not_set`, picked as its injector ConfigMap picks them. */
export function chartValues(chartValuesYaml: string): Values {
  const doc = parseInjectorValues(chartValuesYaml, 'istio-discovery values.yaml');
  const all = isRecord(doc._internal_defaults_do_not_set) ? doc._internal_defaults_do_not_set : doc;
  const pick = (from: unknown, keys: readonly string[]): Record<string, unknown> => {
    const out: Record<string, unknown> = {};
    if (isRecord(from)) for (const k of keys) if (from[k] !== undefined) out[k] = from[k];
    return out;
  };
  return {
    ...pick(all, ['global', 'sidecarInjectorWebhook', 'revision']),
    pilot: pick(all, ['cni', 'env']),
    gateways: pick(all.gateways, ['securityContext', 'seccompProfile']),
  };
}

export interface BuiltinInjector {
  readonly config: InjectorConfig;
  readonly values: Values;
}

/** Istio's default injector: templates sidecar, gateway, grpc-agent, grpc-simple, kube-gateway and waypoint (the Gateway API deployments), policy enabled, chart values. */
export function builtinInjector(dir: string = builtinTemplatesDir()): BuiltinInjector {
  const read = (f: string): string => readFileSync(path.join(dir, f), 'utf8');
  const values = chartValues(read('values.yaml'));
  const webhook = isRecord(values.sidecarInjectorWebhook) ? values.sidecarInjectorWebhook : {};
  const global = isRecord(values.global) ? values.global : {};
  const proxy = isRecord(global.proxy) ? global.proxy : {};
  const config: InjectorConfig = {
    policy: typeof proxy.autoInject === 'string' ? proxy.autoInject : 'enabled',
    defaultTemplates: ['sidecar'],
    templates: {
      sidecar: read('injection-template.yaml'),
      gateway: read('gateway-injection-template.yaml'),
      'grpc-agent': read('grpc-agent.yaml'),
      'grpc-simple': read('grpc-simple.yaml'),
      'kube-gateway': read('kube-gateway.yaml'),
      waypoint: read('waypoint.yaml'),
    },
    aliases: {},
    neverInjectSelector: selectors(webhook.neverInjectSelector, 'chart values', 'sidecarInjectorWebhook.neverInjectSelector'),
    alwaysInjectSelector: selectors(webhook.alwaysInjectSelector, 'chart values', 'sidecarInjectorWebhook.alwaysInjectSelector'),
    injectedAnnotations: stringMap(webhook.injectedAnnotations, 'chart values', 'sidecarInjectorWebhook.injectedAnnotations'),
    ignoredKeys: [],
  };
  return { config, values };
}
