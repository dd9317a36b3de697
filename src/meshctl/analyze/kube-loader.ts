/**
 * `meshctl analyze` against a live cluster (istioctl's --use-kube): every Istio object the API
 * serves, validated as the config sources validate them, plus the Kubernetes objects analyzers
 * read (Services, Pods, Namespaces, Deployments, gateway credential Secrets, ConfigMaps, Nodes,
 * webhook configurations, CRDs) and the kinds only
 * istioctl analyzes (EnvoyFilter, Telemetry). Objects keep no file origin: messages name them as
 * istioctl does, `(Kind ns/name)`.
 */
import { type Config, KINDS, type KindName, validateObjectWithWarnings } from '../../config/index.js';
import { ISTIO_KINDS, kubeOrigin, type CustomObject } from '../../config/sources/kube/index.js';
import { kubeClient, statusCodeOf, type KubeClient, type KubeConfig } from '../../kube/index.js';
import { addCoreObject, emptyCoreObjects, type CoreObjects } from './core-objects.js';
import { EXTRA_KINDS, type ExtraKindName } from './extra-kinds.js';
import type { RemoteCluster } from './model.js';

/** Every object the cluster holds that analyzers read (the same lists a file load fills). */
export interface ClusterObjects extends CoreObjects {
  readonly configs: readonly Config[];
}

/** Lists a kind at the first version the server serves; a kind whose CRD is not installed has no objects. */
async function listKind(api: KubeClient, group: string, versions: readonly string[], plural: string): Promise<CustomObject[]> {
  for (const version of versions) {
    try {
      return await api.listAll<CustomObject>(`/apis/${group}/${version}/${plural}`);
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
  // The client retries 429 (e.g. "storage is (re)initializing" just after a CRD is created), as client-go does.
  const api = kubeClient(kc);
  const all = (path: string, fieldSelector?: string): Promise<object[]> =>
    api.listAll<object>(path, fieldSelector !== undefined ? { fieldSelector } : {});
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
  const [kinds, extras, svcList, podList, nsList, deployList, secretList, cmList, nodeList, mwhList, vwhList, crdList] = await Promise.all([
    Promise.all(
      ISTIO_KINDS.map(async (kind) => ({
        kind,
        items: await listKind(api, KINDS[kind].group, KINDS[kind].versions, KINDS[kind].plural),
      })),
    ),
    Promise.all(
      extraNames.map(async (kind) => ({
        kind,
        items: await listKind(api, EXTRA_KINDS[kind].group, EXTRA_KINDS[kind].versions, EXTRA_KINDS[kind].plural),
      })),
    ),
    all('/api/v1/services'),
    all('/api/v1/pods'),
    all('/api/v1/namespaces'),
    all('/apis/apps/v1/deployments'),
    all('/api/v1/secrets', SECRET_TYPES),
    all('/api/v1/configmaps'),
    all('/api/v1/nodes'),
    all('/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations'),
    all('/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations'),
    all('/apis/apiextensions.k8s.io/v1/customresourcedefinitions'),
  ]);
  for (const { kind, items } of kinds) for (const raw of items) addConfig(kind, raw);
  for (const raw of secretList) addConfig('Secret', { ...raw, apiVersion: 'v1', kind: 'Secret' } as CustomObject);
  // List items carry no apiVersion/kind; the reader keys on them.
  const typed = (apiVersion: string, kind: string, items: readonly object[]): unknown[] => items.map((i) => ({ ...i, apiVersion, kind }));
  for (const { kind, items } of extras)
    for (const raw of typed(`${EXTRA_KINDS[kind].group}/${EXTRA_KINDS[kind].versions[0]}`, kind, items))
      addCoreObject(out, raw, '', undefined);
  for (const raw of typed('v1', 'Service', svcList)) addCoreObject(out, raw, '', undefined);
  for (const raw of typed('v1', 'Pod', podList)) addCoreObject(out, raw, '', undefined);
  for (const raw of typed('v1', 'Namespace', nsList)) addCoreObject(out, raw, '', undefined);
  for (const raw of typed('apps/v1', 'Deployment', deployList)) addCoreObject(out, raw, '', undefined);
  for (const raw of typed('v1', 'Secret', secretList)) addCoreObject(out, raw, '', undefined);
  for (const raw of typed('v1', 'ConfigMap', cmList)) addCoreObject(out, raw, '', undefined);
  for (const raw of typed('v1', 'Node', nodeList)) addCoreObject(out, raw, '', undefined);
  const admissionVersion = 'admissionregistration.k8s.io/v1';
  for (const raw of typed(admissionVersion, 'MutatingWebhookConfiguration', mwhList)) addCoreObject(out, raw, '', undefined);
  for (const raw of typed(admissionVersion, 'ValidatingWebhookConfiguration', vwhList)) addCoreObject(out, raw, '', undefined);
  for (const raw of typed('apiextensions.k8s.io/v1', 'CustomResourceDefinition', crdList)) addCoreObject(out, raw, '', undefined);
  return { ...out, configs };
}

/**
 * A remote cluster of the mesh (istioctl's --remote-contexts): its Services, for the multi-cluster
 * analyzer. istioctl reads a remote cluster's service-discovery kinds only, never its Istio config.
 */
export async function loadRemoteServices(kc: KubeConfig, id: string): Promise<RemoteCluster> {
  const list = await kubeClient(kc).listAll<object>('/api/v1/services');
  const out = emptyCoreObjects();
  for (const raw of list) addCoreObject(out, { ...raw, apiVersion: 'v1', kind: 'Service' }, '', undefined);
  return { id, services: out.objects.filter((o) => o.ref.kind === 'Service') };
}
