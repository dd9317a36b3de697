/**
 * `meshctl analyze` against a live cluster (istioctl's --use-kube): every Istio object the API
 * serves, validated as the config sources validate them, plus the Kubernetes objects analyzers
 * read (Services, Pods, Namespaces, Deployments, gateway credential Secrets, ConfigMaps, Nodes,
 * webhook configurations, CRDs) and the kinds only
 * istioctl analyzes (EnvoyFilter, Telemetry). Objects keep no file origin: messages name them as
 * istioctl does, `(Kind ns/name)`.
 */
import {
  AdmissionregistrationV1Api,
  ApiextensionsV1Api,
  AppsV1Api,
  CoreV1Api,
  CustomObjectsApi,
  type KubeConfig,
} from '@kubernetes/client-node';
import { type Config, KINDS, type KindName, validateObjectWithWarnings } from '../../config/index.js';
import { ISTIO_KINDS, kubeOrigin, statusCodeOf, type CustomObject } from '../../config/sources/kube/index.js';
import { addCoreObject, emptyCoreObjects, type CoreObjects } from './core-objects.js';
import { EXTRA_KINDS, type ExtraKindName } from './extra-kinds.js';
import type { RemoteCluster } from './model.js';

/** Every object the cluster holds that analyzers read (the same lists a file load fills). */
export interface ClusterObjects extends CoreObjects {
  readonly configs: readonly Config[];
}

/** Calls the API again while it answers 429 (e.g. "storage is (re)initializing" just after a CRD is created), as client-go does. */
async function retrying<T>(call: () => Promise<T>, attempts = 10): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await call();
    } catch (err) {
      if (statusCodeOf(err) !== 429 || i >= attempts) throw err;
      await new Promise((r) => setTimeout(r, 250 * i));
    }
  }
}

/** Lists a kind at the first version the server serves; a kind whose CRD is not installed has no objects. */
async function listKind(api: CustomObjectsApi, group: string, versions: readonly string[], plural: string): Promise<CustomObject[]> {
  for (const version of versions) {
    try {
      const list = (await retrying(() => api.listClusterCustomObject({ group, version, plural }))) as { items?: CustomObject[] };
      return list.items ?? [];
    } catch (err) {
      if (statusCodeOf(err) === 404) continue;
      throw err;
    }
  }
  return [];
}

/** Only Secrets that can hold a gateway credential: not Helm releases or service account tokens (large, never a credential). */
const SECRET_TYPES = 'type!=helm.sh/release.v1,type!=kubernetes.io/service-account-token';

export async function loadCluster(kc: KubeConfig): Promise<ClusterObjects> {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const core = kc.makeApiClient(CoreV1Api);
  const apps = kc.makeApiClient(AppsV1Api);
  const configs: Config[] = [];
  const out = emptyCoreObjects();
  const addConfig = (kind: KindName, raw: CustomObject): void => {
    const namespace = raw.metadata?.namespace ?? '';
    const name = raw.metadata?.name ?? '';
    const apiKind = (raw.kind as string | undefined) ?? kind;
    const { result: r, warnings } = validateObjectWithWarnings({ ...raw, kind: apiKind }, { file: kubeOrigin(kind, namespace, name) });
    if (warnings.length > 0) out.warnings.push({ ref: { kind, namespace, name }, warnings });
    const status = (raw as { status?: unknown }).status;
    if (typeof status === 'object' && status !== null) {
      const body = raw as unknown as Record<string, unknown>;
      const apiVersion = typeof body.apiVersion === 'string' ? body.apiVersion : '';
      out.statusObjects.push({ ref: { kind: apiKind, namespace, name }, apiVersion, labels: {}, annotations: {}, body });
    }
    if (r.ok) {
      const { origin: _origin, ...meta } = r.value.meta;
      configs.push({ ...r.value, meta } as Config);
    } else {
      out.invalid.push({ ref: { kind, namespace, name }, errors: r.errors });
    }
  };
  const extraNames = Object.keys(EXTRA_KINDS) as ExtraKindName[];
  const admission = kc.makeApiClient(AdmissionregistrationV1Api);
  const [kinds, extras, svcList, podList, nsList, deployList, secretList, cmList, nodeList, mwhList, vwhList, crdList] = await Promise.all([
    Promise.all(
      ISTIO_KINDS.map(async (kind) => ({
        kind,
        items: await listKind(custom, KINDS[kind].group, KINDS[kind].versions, KINDS[kind].plural),
      })),
    ),
    Promise.all(
      extraNames.map(async (kind) => ({
        kind,
        items: await listKind(custom, EXTRA_KINDS[kind].group, EXTRA_KINDS[kind].versions, EXTRA_KINDS[kind].plural),
      })),
    ),
    retrying(() => core.listServiceForAllNamespaces()),
    retrying(() => core.listPodForAllNamespaces()),
    retrying(() => core.listNamespace()),
    retrying(() => apps.listDeploymentForAllNamespaces()),
    retrying(() => core.listSecretForAllNamespaces({ fieldSelector: SECRET_TYPES })),
    retrying(() => core.listConfigMapForAllNamespaces()),
    retrying(() => core.listNode()),
    retrying(() => admission.listMutatingWebhookConfiguration()),
    retrying(() => admission.listValidatingWebhookConfiguration()),
    retrying(() => kc.makeApiClient(ApiextensionsV1Api).listCustomResourceDefinition()),
  ]);
  for (const { kind, items } of kinds) for (const raw of items) addConfig(kind, raw);
  for (const raw of secretList.items) addConfig('Secret', { ...raw, apiVersion: 'v1', kind: 'Secret' } as CustomObject);
  // List items carry no apiVersion/kind; the reader keys on them.
  const typed = (apiVersion: string, kind: string, items: readonly object[]): unknown[] => items.map((i) => ({ ...i, apiVersion, kind }));
  for (const { kind, items } of extras)
    for (const raw of typed(`${EXTRA_KINDS[kind].group}/${EXTRA_KINDS[kind].versions[0]}`, kind, items))
      addCoreObject(out, raw, '', undefined);
  for (const raw of typed('v1', 'Service', svcList.items)) addCoreObject(out, raw, '', undefined);
  for (const raw of typed('v1', 'Pod', podList.items)) addCoreObject(out, raw, '', undefined);
  for (const raw of typed('v1', 'Namespace', nsList.items)) addCoreObject(out, raw, '', undefined);
  for (const raw of typed('apps/v1', 'Deployment', deployList.items)) addCoreObject(out, raw, '', undefined);
  for (const raw of typed('v1', 'Secret', secretList.items)) addCoreObject(out, raw, '', undefined);
  for (const raw of typed('v1', 'ConfigMap', cmList.items)) addCoreObject(out, raw, '', undefined);
  for (const raw of typed('v1', 'Node', nodeList.items)) addCoreObject(out, raw, '', undefined);
  const admissionVersion = 'admissionregistration.k8s.io/v1';
  for (const raw of typed(admissionVersion, 'MutatingWebhookConfiguration', mwhList.items)) addCoreObject(out, raw, '', undefined);
  for (const raw of typed(admissionVersion, 'ValidatingWebhookConfiguration', vwhList.items)) addCoreObject(out, raw, '', undefined);
  for (const raw of typed('apiextensions.k8s.io/v1', 'CustomResourceDefinition', crdList.items)) addCoreObject(out, raw, '', undefined);
  return { ...out, configs };
}

/**
 * A remote cluster of the mesh (istioctl's --remote-contexts): its Services, for the multi-cluster
 * analyzer. istioctl reads a remote cluster's service-discovery kinds only, never its Istio config.
 */
export async function loadRemoteServices(kc: KubeConfig, id: string): Promise<RemoteCluster> {
  const list = await retrying(() => kc.makeApiClient(CoreV1Api).listServiceForAllNamespaces());
  const out = emptyCoreObjects();
  for (const raw of list.items) addCoreObject(out, { ...raw, apiVersion: 'v1', kind: 'Service' }, '', undefined);
  return { id, services: out.objects.filter((o) => o.ref.kind === 'Service') };
}
