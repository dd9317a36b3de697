/**
 * istiod's EffectiveProxyConfig (pilot/pkg/model/proxy_config.go): the ProxyConfig a workload runs
 * with, lowest precedence first — Istio's defaults, mesh `defaultConfig`, the root namespace's
 * selector-less ProxyConfig resource, the workload namespace's selector-less one, the pod's
 * `proxy.istio.io/config` annotation, then the first ProxyConfig in its namespace whose selector
 * matches its labels. Each layer overrides the fields it sets; `proxyMetadata` (ProxyConfig
 * resources' environmentVariables) merges key by key. Within a namespace the oldest resource wins
 * (creation time, then name, as istiod sorts them).
 */
import { toJson } from '@bufbuild/protobuf';
import { type Config, inCreationOrder, isEmptyLabels, labelsSubsetOf } from '../config/index.js';
import { ProxyConfigSchema, type ProxyConfig } from '../gen/mesh/v1alpha1/proxy_pb.js';
import type { MeshConfig } from '../gen/mesh/v1alpha1/config_pb.js';
import type { ProxyConfig as ProxyConfigResource } from '../gen/networking/v1beta1/proxy_config_pb.js';
import { mergeProxyConfig } from './mesh.js';
import { PROXY_CONFIG_ANNOTATION } from '../config/constants.js';
import { MeshError } from '../util/errors.js';

/** ProxyConfig resources by namespace (in any order), and the mesh's root namespace. */
export interface ProxyConfigSource {
  list(namespace: string): readonly Config<'ProxyConfig'>[];
  readonly rootNamespace: string;
}

export interface WorkloadMeta {
  readonly namespace: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
}

/** A resource's fields as mesh ProxyConfig YAML (only what it sets, as istiod's toMeshConfigProxyConfig). */
function asMeshProxyConfig(pc: ProxyConfigResource): string {
  const out: Record<string, unknown> = {};
  if (pc.concurrency !== undefined) out.concurrency = pc.concurrency;
  if (Object.keys(pc.environmentVariables).length > 0) out.proxyMetadata = pc.environmentVariables;
  if (pc.image) out.image = { imageType: pc.image.imageType };
  return JSON.stringify(out);
}

const selectorless = (cs: readonly Config<'ProxyConfig'>[]): Config<'ProxyConfig'> | undefined =>
  inCreationOrder(cs).find((c) => c.spec.selector === undefined);

function selecting(cs: readonly Config<'ProxyConfig'>[], labels: Readonly<Record<string, string>>): Config<'ProxyConfig'> | undefined {
  return inCreationOrder(cs).find((c) => {
    // An empty selector picks nothing here (istiod: a ProxyConfig selector must name a label).
    const want = c.spec.selector?.matchLabels ?? {};
    return !isEmptyLabels(want) && labelsSubsetOf(want, labels);
  });
}

export function effectiveProxyConfig(mesh: MeshConfig, src: ProxyConfigSource | undefined, w: WorkloadMeta): ProxyConfig {
  const base = mesh.defaultConfig;
  if (base === undefined) throw new MeshError('INVALID_ARGUMENT', 'mesh config has no defaultConfig');
  let pc: ProxyConfig = base;
  const apply = (yaml: string, origin: string): void => {
    pc = mergeProxyConfig(pc, yaml, origin);
  };
  const layer = (c: Config<'ProxyConfig'> | undefined): void => {
    if (c) apply(asMeshProxyConfig(c.spec), `ProxyConfig ${c.meta.namespace}/${c.meta.name}`);
  };
  if (src) {
    layer(selectorless(src.list(src.rootNamespace)));
    if (w.namespace !== src.rootNamespace) layer(selectorless(src.list(w.namespace)));
  }
  const annotation = w.annotations[PROXY_CONFIG_ANNOTATION];
  if (annotation !== undefined) apply(annotation, `annotation ${PROXY_CONFIG_ANNOTATION}`);
  if (src) layer(selecting(src.list(w.namespace), w.labels));
  return pc;
}

/** The effective config as the proto3 JSON of the fields this file resolves (for logs and tests). */
export const proxyConfigJson = (pc: ProxyConfig): unknown => toJson(ProxyConfigSchema, pc);
