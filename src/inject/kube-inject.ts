/**
 * Injection into workload manifests, as `istioctl kube-inject` does it (istiod's IntoObject): the
 * pod template of a Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, ReplicationController,
 * DeploymentConfig, CronJob (its jobTemplate metadata, as istiod), a Pod, or every item of a List.
 * Unlike the webhook, kube-inject ignores the injector's policy and selectors (istiod injects with
 * policy "enabled"), and namespace labels are not known. For `meshctl kube-inject`.
 */
import type { InjectionConfig } from './inject.js';
import { injectPod } from './inject.js';
import type { JsonValue } from '../util/json-patch.js';
import type { JsonObject } from './render.js';

export interface KubeInjectResult {
  /** The object with its pod template injected (the input itself when nothing was done). */
  readonly object: JsonObject;
  /** istiod's warnings ("===> Skipping injection because …"). */
  readonly warnings: readonly string[];
}

function rec(v: JsonValue | undefined): JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? v : {};
}

const TEMPLATE_KINDS = new Set([
  'Deployment',
  'StatefulSet',
  'DaemonSet',
  'ReplicaSet',
  'Job',
  'ReplicationController',
  'DeploymentConfig',
]);

/** Injects one manifest document; kinds without a pod template come back unchanged. */
export function kubeInject(doc: JsonObject, config: InjectionConfig): KubeInjectResult {
  const kind = String(doc.kind ?? '');
  if (kind === 'List') {
    const warnings: string[] = [];
    const items = (Array.isArray(doc.items) ? doc.items : []).map((item) => {
      const r = kubeInject(rec(item), config);
      warnings.push(...r.warnings);
      return r.object;
    });
    return { object: { ...doc, items }, warnings };
  }
  const meta = rec(doc.metadata);
  const objectName = String(meta.name ?? '');
  const objectNamespace = String(meta.namespace ?? '');
  // Where the pod metadata and spec live, and how to put the injected ones back.
  let podMeta: JsonObject;
  let podSpec: JsonObject;
  let put: (metadata: JsonObject, spec: JsonObject) => JsonObject;
  if (kind === 'Pod') {
    podMeta = meta;
    podSpec = rec(doc.spec);
    put = (metadata, spec) => ({ ...doc, metadata, spec });
  } else if (kind === 'CronJob') {
    const jobTemplate = rec(rec(doc.spec).jobTemplate);
    const jobSpec = rec(jobTemplate.spec);
    const template = rec(jobSpec.template);
    podMeta = rec(jobTemplate.metadata);
    podSpec = rec(template.spec);
    put = (metadata, spec) => ({
      ...doc,
      spec: { ...rec(doc.spec), jobTemplate: { ...jobTemplate, metadata, spec: { ...jobSpec, template: { ...template, spec } } } },
    });
  } else if (TEMPLATE_KINDS.has(kind) && rec(doc.spec).template !== undefined) {
    const template = rec(rec(doc.spec).template);
    podMeta = rec(template.metadata);
    podSpec = rec(template.spec);
    put = (metadata, spec) => ({ ...doc, spec: { ...rec(doc.spec), template: { ...template, metadata, spec } } });
  } else {
    return { object: doc, warnings: [] };
  }
  const fullName = objectNamespace !== '' ? `${objectNamespace}/${String(podMeta.name ?? objectName)}` : String(podMeta.name ?? objectName);
  const what = kind !== '' ? `${kind} "${fullName}"` : `"${fullName}"`;
  if (podSpec.hostNetwork === true)
    return { object: doc, warnings: [`===> Skipping injection because ${what} has host networking enabled\n`] };
  const namespace = String(podMeta.namespace ?? objectNamespace);
  const owner =
    kind === 'Pod'
      ? {}
      : { typeMeta: { apiVersion: String(doc.apiVersion ?? ''), kind }, deployMeta: { name: objectName, namespace: objectNamespace } };
  const kubeInjectConfig: InjectionConfig = {
    ...config,
    injector: { ...config.injector, policy: 'enabled', neverInjectSelector: [], alwaysInjectSelector: [] },
    ...owner,
  };
  delete (kubeInjectConfig as { namespaceLabels?: unknown }).namespaceLabels;
  const result = injectPod({ metadata: podMeta, spec: podSpec }, namespace, kubeInjectConfig);
  if ('skipped' in result)
    return { object: doc, warnings: [`===> Skipping injection because ${what} has sidecar injection disabled (${result.skipped})\n`] };
  return { object: put(rec(result.injected.metadata), rec(result.injected.spec)), warnings: [] };
}
