/**
 * Runs the injection templates as istiod's RunTemplate does: the data is istiod's
 * SidecarTemplateData (as Go structs, see go-view.ts), each selected template renders a partial
 * Pod in YAML, and every one is merged (strategic merge) both into an empty "template pod" (what
 * the injector added: the status annotation lists it) and into the pod itself.
 */
import { parse as parseYaml } from 'yaml';
import { MeshConfigSchema, type MeshConfig } from '../gen/mesh/v1alpha1/config_pb.js';
import { ProxyConfigSchema, type ProxyConfig } from '../gen/mesh/v1alpha1/proxy_pb.js';
import { parseTemplates, type TemplateSet } from '../template/index.js';
import { MeshError, errorMessage } from '../util/errors.js';
import type { InjectorConfig, Values } from './config.js';
import { injectionFuncs } from './funcs.js';
import { goSprint } from './funcs.js';
import { k8sView, namespacedNameView, protoView, typeMetaView } from './go-view.js';
import type { JsonValue } from '../util/json-patch.js';
import { strategicMerge } from './strategic-merge.js';
import { PROXY_CONTAINER } from '../config/constants.js';

export type JsonObject = { [key: string]: JsonValue };

/** istiod's SidecarTemplateData; a class, so that the template engine sees a struct. */
export class SidecarTemplateData {
  constructor(
    readonly TypeMeta: unknown,
    readonly DeploymentMeta: unknown,
    readonly ObjectMeta: unknown,
    readonly Spec: unknown,
    readonly ProxyConfig: unknown,
    readonly MeshConfig: unknown,
    readonly Values: Values,
    readonly Revision: string,
    readonly NativeSidecars: boolean,
    readonly ProxyImage: string,
    readonly ProxyInitImage: string,
    readonly ProxyUID: bigint,
    readonly ProxyGID: bigint,
    readonly InboundTrafficPolicyMode: string,
    readonly CompliancePolicy: string,
  ) {}
}

export interface RenderInputs {
  /** The pod as JSON, after stripping (metadata + spec are what templates see). */
  readonly pod: JsonObject;
  readonly typeMeta: { readonly apiVersion: string; readonly kind: string };
  readonly deployMeta: { readonly name: string; readonly namespace: string };
  readonly proxyConfig: ProxyConfig;
  readonly mesh: MeshConfig;
  readonly values: Values;
  readonly revision: string;
  readonly nativeSidecars: boolean;
  readonly proxyUid: bigint;
  readonly proxyGid: bigint;
  /** istiod's COMPLIANCE_POLICY ('' or e.g. fips-140-3). */
  readonly compliancePolicy: string;
}

function rec(v: unknown): Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

const KNOWN_IMAGE_TYPES = ['distroless', 'debug'];

/** istiod's updateImageTypeIfPresent: a known -variant suffix is replaced by the requested one. */
function withImageType(tag: string, imageType: string): string {
  if (imageType === '') return tag;
  let t = tag;
  const known = KNOWN_IMAGE_TYPES.find((k) => t.endsWith(`-${k}`));
  if (known !== undefined) t = t.slice(0, t.length - known.length - 1);
  return imageType === 'default' ? t : `${t}-${imageType}`;
}

/** istiod's ProxyImage / ProxyInitImage: `<hub>/<image>:<tag>[-<variant>]`. */
export function imageUrl(
  values: Values,
  kind: 'proxy' | 'proxy_init',
  proxyImageType: string,
  annotations: Readonly<Record<string, string>>,
): string {
  const global = rec(values.global);
  const configured = rec(global[kind]).image;
  const name = typeof configured === 'string' && configured !== '' ? configured : 'proxyv2';
  const tag = global.tag === undefined || global.tag === null ? '' : goSprint(global.tag);
  let imageType = proxyImageType !== '' ? proxyImageType : typeof global.variant === 'string' ? global.variant : '';
  const fromAnnotation = annotations['sidecar.istio.io/proxyImageType'];
  if (fromAnnotation !== undefined) imageType = fromAnnotation;
  const hub = typeof global.hub === 'string' ? global.hub : '';
  return `${hub}/${name}:${withImageType(tag, imageType)}`;
}

export function buildTemplateData(inputs: RenderInputs): SidecarTemplateData {
  const metadata = rec(inputs.pod.metadata);
  const annotations = rec(metadata.annotations) as Record<string, string>;
  const inbound = inputs.mesh.inboundTrafficPolicy?.mode === 1 ? 'localhost' : 'passthrough';
  return new SidecarTemplateData(
    typeMetaView(inputs.typeMeta.apiVersion, inputs.typeMeta.kind),
    namespacedNameView(inputs.deployMeta.name, inputs.deployMeta.namespace),
    k8sView(inputs.pod.metadata ?? {}, 'metadata'),
    k8sView(inputs.pod.spec ?? {}, 'spec'),
    protoView(ProxyConfigSchema, inputs.proxyConfig),
    protoView(MeshConfigSchema, inputs.mesh),
    inputs.values,
    inputs.revision,
    inputs.nativeSidecars,
    imageUrl(inputs.values, 'proxy', inputs.proxyConfig.image?.imageType ?? '', annotations),
    imageUrl(inputs.values, 'proxy_init', '', annotations),
    inputs.proxyUid,
    inputs.proxyGid,
    inbound,
    inputs.compliancePolicy,
  );
}

/** Parsed templates of one injector config, by name. Parse errors name the template and line. */
export class CompiledTemplates {
  readonly #sets = new Map<string, TemplateSet>();

  constructor(config: InjectorConfig, env: Readonly<Record<string, string | undefined>>) {
    const funcs = injectionFuncs({ env });
    for (const [name, text] of Object.entries(config.templates)) {
      try {
        this.#sets.set(name, parseTemplates([{ name, text }], { funcs }));
      } catch (err) {
        throw new MeshError('INVALID_ARGUMENT', `injection template "${name}": ${errorMessage(err)}`, { cause: err });
      }
    }
  }

  names(): string[] {
    return [...this.#sets.keys()].sort();
  }

  /** Runs one template to text (data: SidecarTemplateData, or the gateway deployment's input); unknown names list the known ones, as istiod does. */
  execute(name: string, data: object): string {
    const set = this.#sets.get(name);
    if (set === undefined)
      throw new MeshError('INVALID_ARGUMENT', `requested template "${name}" not found; have ${this.names().join(', ')}`);
    return set.execute(name, data);
  }
}

/** The rendered YAML as a partial Pod (YAML 1.1, as sigs.k8s.io/yaml reads it). */
export function parseRenderedPod(text: string, template: string): JsonObject {
  let doc: unknown;
  try {
    doc = parseYaml(text, { version: '1.1', maxAliasCount: 100, uniqueKeys: false });
  } catch (err) {
    throw new MeshError(
      'INVALID_ARGUMENT',
      `failed parsing generated injected YAML of template "${template}" (check the sidecar injector configuration): ${errorMessage(err)}`,
    );
  }
  doc ??= {};
  if (typeof doc !== 'object' || Array.isArray(doc))
    throw new MeshError('INVALID_ARGUMENT', `template "${template}" did not render a Pod (a YAML mapping)`);
  return doc as JsonObject;
}

export interface RenderResult {
  /** The pod with every template merged in. */
  readonly merged: JsonObject;
  /** Only what the templates rendered, merged into an empty pod. */
  readonly templatePod: JsonObject;
}

function containersOf(pod: JsonObject, field: 'containers' | 'initContainers'): JsonObject[] {
  const list = rec(pod.spec)[field];
  return Array.isArray(list) ? (list as JsonObject[]) : [];
}

/** Runs `templateNames` in order and merges each result (istiod's RunTemplate loop). */
export function runTemplates(
  templates: CompiledTemplates,
  templateNames: readonly string[],
  data: SidecarTemplateData,
  pod: JsonObject,
  nativeSidecars: boolean,
): RenderResult {
  let merged = pod;
  let templatePod: JsonObject = {};
  const annotation = rec(rec(pod.metadata).annotations)['sidecar.istio.io/nativeSidecar'];
  const native = annotation === 'true' ? true : annotation === 'false' ? false : nativeSidecars;
  for (const name of templateNames) {
    const rendered = parseRenderedPod(templates.execute(name, data), name);
    templatePod = strategicMerge(templatePod, rendered);
    // A customised istio-proxy under `containers` moves to initContainers when the template makes it native.
    const inTemplateInit = containersOf(templatePod, 'initContainers').some((c) => c.name === PROXY_CONTAINER);
    const userProxy = containersOf(merged, 'containers').find((c) => c.name === PROXY_CONTAINER);
    if (native && inTemplateInit && userProxy !== undefined) {
      const spec = rec(merged.spec) as JsonObject;
      merged = {
        ...merged,
        spec: {
          ...spec,
          containers: containersOf(merged, 'containers').filter((c) => c !== userProxy),
          initContainers: [...containersOf(merged, 'initContainers'), userProxy],
        },
      };
    }
    merged = strategicMerge(merged, rendered);
  }
  return { merged, templatePod };
}
