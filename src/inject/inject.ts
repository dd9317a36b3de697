/**
 * Sidecar injection of one pod, as istiod's webhook does it (pkg/kube/inject webhook.go inject +
 * injectPod): decide, render the templates with the pod's ProxyConfig, merge, post-process, and
 * answer with the JSON Patch from the pod as sent to the injected pod.
 */
import type { MeshConfig } from '../gen/mesh/v1alpha1/config_pb.js';
import type { ProxyConfig } from '../gen/mesh/v1alpha1/proxy_pb.js';
import { ProxyConfig_InboundInterceptionMode } from '../gen/mesh/v1alpha1/proxy_pb.js';
import { MeshError, errorMessage } from '../util/errors.js';
import { applyProbeRewrite } from './app-probe.js';
import type { InjectorConfig, Values } from './config.js';
import { createJsonPatch } from './json-patch.js';
import type { JsonPatchOp, JsonValue } from '../util/json-patch.js';
import { effectiveProxyConfig, type ProxyConfigSource } from './proxy-config.js';
import { injectRequired, webhookSelects, type Decision } from './policy.js';
import { buildTemplateData, runTemplates, type CompiledTemplates, type JsonObject } from './render.js';
import {
  applyPrometheusMerge,
  applySecurePrometheusAnnotation,
  fromWorkPod,
  injectionStatus,
  overwriteClusterEnv,
  reapplyUserContainers,
  reorderContainers,
  toWorkPod,
} from './pod-edits.js';
import { validateAnnotations } from './validate.js';
import { NETWORK_LABEL, SIDECAR_INJECT, SIDECAR_STATUS_ANNOTATION } from '../config/constants.js';

/** Everything an injection reads besides the pod: one consistent snapshot of the injector's inputs. */
export interface InjectionConfig {
  readonly injector: InjectorConfig;
  readonly templates: CompiledTemplates;
  readonly values: Values;
  readonly mesh: MeshConfig;
  /** The istiod revision served ('' = default); written to the status annotation and `istio.io/rev`. */
  readonly revision: string;
  /** Render the proxy as a native sidecar (an init container with restartPolicy Always). */
  readonly nativeSidecars: boolean;
  /** istiod's COMPLIANCE_POLICY. */
  readonly compliancePolicy?: string;
  /** Revision tags that point at this revision (their webhooks call this injector too). */
  readonly revisionTags?: readonly string[];
  /** Labels of the pod's namespace, for the webhook selectors; undefined skips that stage (kube-inject). */
  readonly namespaceLabels?: Readonly<Record<string, string>>;
  /** ISTIO_META_CLUSTER_ID / ISTIO_META_NETWORK (and other env) from the webhook path. */
  readonly proxyEnvs?: Readonly<Record<string, string>>;
  /** ProxyConfig resources (networking.istio.io/v1beta1) when the caller has them; else mesh + annotation only. */
  readonly proxyConfigs?: ProxyConfigSource;
  /** Owner facts when the caller knows them (kube-inject of a Deployment); else derived from the pod. */
  readonly typeMeta?: { readonly apiVersion: string; readonly kind: string };
  readonly deployMeta?: { readonly name: string; readonly namespace: string };
}

export type InjectResult =
  { readonly patch: JsonPatchOp[]; readonly injected: JsonObject; readonly reason: string } | { readonly skipped: string };

function rec(v: JsonValue | undefined): JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? v : {};
}

function strings(v: JsonValue | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, e] of Object.entries(rec(v))) if (typeof e === 'string') out[k] = e;
  return out;
}

/** istiod's kube.GetDeployMetaFromPod: the workload a controller-made pod belongs to. */
export function deployMetaFromPod(pod: JsonObject): {
  typeMeta: { apiVersion: string; kind: string };
  deployMeta: { name: string; namespace: string };
} {
  const meta = rec(pod.metadata);
  const name = typeof meta.name === 'string' ? meta.name : '';
  const namespace = typeof meta.namespace === 'string' ? meta.namespace : '';
  const labels = strings(meta.labels);
  const typeMeta = { apiVersion: 'v1', kind: 'Pod' };
  const deployMeta = { name, namespace };
  const generateName = typeof meta.generateName === 'string' ? meta.generateName : '';
  const owner = (Array.isArray(meta.ownerReferences) ? meta.ownerReferences : []).map(rec).find((r) => r.controller === true);
  if (generateName !== '' && owner !== undefined) {
    typeMeta.apiVersion = String(owner.apiVersion ?? '');
    typeMeta.kind = String(owner.kind ?? '');
    const ownerName = String(owner.name ?? '');
    deployMeta.name = ownerName;
    const hash = labels['pod-template-hash'] ?? '';
    const rolloutHash = labels['rollouts-pod-template-hash'] ?? '';
    const cron = /^(.+)-\d{8,10}$/.exec(ownerName);
    if (typeMeta.kind === 'ReplicaSet' && hash !== '' && ownerName.endsWith(hash)) {
      deployMeta.name = ownerName.endsWith(`-${hash}`) ? ownerName.slice(0, -(hash.length + 1)) : ownerName;
      typeMeta.kind = 'Deployment';
    } else if (typeMeta.kind === 'ReplicaSet' && rolloutHash !== '' && ownerName.endsWith(rolloutHash)) {
      deployMeta.name = ownerName.endsWith(`-${rolloutHash}`) ? ownerName.slice(0, -(rolloutHash.length + 1)) : ownerName;
      typeMeta.kind = 'Rollout';
      typeMeta.apiVersion = 'v1alpha1';
    } else if (typeMeta.kind === 'ReplicationController' && (labels.deploymentconfig ?? '') !== '') {
      deployMeta.name = labels.deploymentconfig ?? '';
      typeMeta.kind = 'DeploymentConfig';
    } else if (typeMeta.kind === 'Job' && cron !== null) {
      deployMeta.name = cron[1] ?? '';
      typeMeta.kind = 'CronJob';
      typeMeta.apiVersion = 'batch/v1';
    }
  }
  if (deployMeta.name === '') deployMeta.name = name;
  return { typeMeta, deployMeta };
}

/** The decision alone (webhook selectors, then istiod's injectRequired), with its reason. */
export function decide(pod: JsonObject, namespace: string, config: InjectionConfig): Decision {
  const meta = rec(pod.metadata);
  const labels = strings(meta.labels);
  const annotations = strings(meta.annotations);
  if (config.namespaceLabels !== undefined) {
    const webhook = webhookSelects(namespace, config.namespaceLabels, labels, {
      revision: config.revision,
      tags: config.revisionTags ?? [],
      enableNamespacesByDefault: rec(config.values.sidecarInjectorWebhook as JsonValue).enableNamespacesByDefault === true,
    });
    if (webhook === undefined) {
      const nsLabels = JSON.stringify(config.namespaceLabels);
      return {
        inject: false,
        reason: `no injection webhook selects it (namespace labels ${nsLabels}, pod label ${SIDECAR_INJECT}=${labels[SIDECAR_INJECT] ?? '(unset)'})`,
      };
    }
  }
  if (annotations[SIDECAR_STATUS_ANNOTATION] !== undefined)
    return { inject: false, reason: `already injected (${SIDECAR_STATUS_ANNOTATION} is set)` };
  return injectRequired(config.injector, { namespace, labels, annotations, hostNetwork: rec(pod.spec).hostNetwork === true });
}

function templatesFor(annotations: Readonly<Record<string, string>>, config: InjectionConfig): string[] {
  const requested = annotations['inject.istio.io/templates'];
  const names = requested !== undefined ? requested.split(',').map((n) => n.trim()) : [...config.injector.defaultTemplates];
  return names.flatMap((n) => config.injector.aliases[n] ?? [n]);
}

/**
 * Injects one pod (JSON as the API server sends it). `namespace` is the request's namespace
 * (pods created with generateName may not carry it). Throws MeshError on a template or
 * annotation problem, naming it.
 */
export function injectPod(podIn: JsonObject, namespace: string, config: InjectionConfig): InjectResult {
  const meta = { ...rec(podIn.metadata) };
  delete meta.managedFields;
  if ((typeof meta.namespace !== 'string' || meta.namespace === '') && namespace !== '') meta.namespace = namespace;
  const pod: JsonObject = { ...podIn, metadata: meta };
  const decision = decide(pod, namespace === '' ? String(meta.namespace ?? '') : namespace, config);
  if (!decision.inject) return { skipped: decision.reason };

  const annotations = strings(meta.annotations);
  validateAnnotations(annotations);
  const proxyConfig = proxyConfigFor(config.mesh, annotations, config.proxyConfigs, {
    namespace: String(meta.namespace ?? namespace),
    labels: strings(meta.labels),
  });
  const owner =
    config.typeMeta !== undefined && config.deployMeta !== undefined
      ? { typeMeta: config.typeMeta, deployMeta: config.deployMeta }
      : deployMetaFromPod(pod);
  const proxyEnvs = { ...(config.proxyEnvs ?? {}) };
  const global = rec(config.values.global as JsonValue);
  const cluster = proxyEnvs.ISTIO_META_CLUSTER_ID || String(rec(global.multiCluster).clusterName ?? '');
  let network = proxyEnvs.ISTIO_META_NETWORK || String(global.network ?? '');
  const topology = strings(meta.labels)[NETWORK_LABEL];
  if (topology !== undefined) network = topology;
  if (cluster !== '') proxyEnvs.ISTIO_META_CLUSTER_ID = cluster;
  if (network !== '') proxyEnvs.ISTIO_META_NETWORK = network;

  const data = buildTemplateData({
    pod,
    typeMeta: owner.typeMeta,
    deployMeta: owner.deployMeta,
    proxyConfig,
    mesh: config.mesh,
    values: config.values,
    revision: config.revision,
    nativeSidecars: config.nativeSidecars,
    proxyUid: 1337n,
    proxyGid: 1337n,
    compliancePolicy: config.compliancePolicy ?? '',
  });
  let rendered;
  try {
    rendered = runTemplates(config.templates, templatesFor(annotations, config), data, pod, config.nativeSidecars);
  } catch (err) {
    throw new MeshError('INVALID_ARGUMENT', `failed to run injection template: ${errorMessage(err)}`, { cause: err });
  }
  const { merged, templatePod } = rendered;
  const tproxy = proxyConfig.interceptionMode === ProxyConfig_InboundInterceptionMode.TPROXY;
  const withUser = reapplyUserContainers(merged, pod, templatePod, tproxy);

  const work = toWorkPod(withUser);
  overwriteClusterEnv(work, proxyEnvs);
  const statusPort = config.mesh.defaultConfig?.statusPort ?? 15020;
  applyPrometheusMerge(work, statusPort, config.mesh.enablePrometheusMerge ?? true);
  applySecurePrometheusAnnotation(work);
  applyProbeRewrite(work, rec(config.values.sidecarInjectorWebhook as JsonValue).rewriteAppHTTPProbe === true, statusPort);
  if (proxyEnvs.ISTIO_META_NETWORK !== undefined) work.metadata.labels[NETWORK_LABEL] = proxyEnvs.ISTIO_META_NETWORK;
  work.metadata.annotations[SIDECAR_STATUS_ANNOTATION] = injectionStatus(templatePod, config.revision);
  Object.assign(work.metadata.annotations, config.injector.injectedAnnotations);
  reorderContainers(
    work,
    proxyConfig.holdApplicationUntilProxyStarts === true || rec(global.proxy).holdApplicationUntilProxyStarts === true,
  );

  const injected = fromWorkPod(work, pod);
  // As istiod: the patch is from the pod with managedFields dropped and the namespace filled in, so
  // it never touches managedFields (the API server owns them).
  return { patch: createJsonPatch(pod, injected), injected, reason: decision.reason };
}

/**
 * The pod's ProxyConfig as istiod's injector resolves it (GetProxyConfigOrDefault): mesh
 * defaultConfig, ProxyConfig resources (root namespace, namespace, workload selector) and the
 * `proxy.istio.io/config` annotation, in istiod's precedence (src/inject/proxy-config.ts).
 */
export function proxyConfigFor(
  mesh: MeshConfig,
  annotations: Readonly<Record<string, string>>,
  resources?: ProxyConfigSource,
  workload: { readonly namespace: string; readonly labels: Readonly<Record<string, string>> } = { namespace: '', labels: {} },
): ProxyConfig {
  if (mesh.defaultConfig === undefined) throw new MeshError('INVALID_ARGUMENT', 'mesh config has no defaultConfig');
  return effectiveProxyConfig(mesh, resources, { ...workload, annotations });
}
