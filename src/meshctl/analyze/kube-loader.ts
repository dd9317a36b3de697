/**
 * `meshctl analyze` against a live cluster (istioctl's --use-kube): every Istio object the API
 * serves, validated as the config sources validate them, plus the Services and Pods analyzers
 * read. Objects keep no file origin: messages name them as istioctl does, `(Kind ns/name)`.
 */
import { CoreV1Api, CustomObjectsApi, type KubeConfig } from '@kubernetes/client-node';
import type { Config } from '../../config/config.js';
import { KINDS } from '../../config/kinds.js';
import { ISTIO_KINDS, kubeOrigin, statusCodeOf, type CustomObject } from '../../config/sources/kube/index.js';
import { validateObject } from '../../config/validation/index.js';
import type { InvalidObject, K8sNamespace, K8sPod, K8sService, ServicePort } from './model.js';

export interface ClusterObjects {
  readonly configs: readonly Config[];
  readonly invalid: readonly InvalidObject[];
  readonly services: readonly K8sService[];
  readonly pods: readonly K8sPod[];
  readonly namespaces: readonly K8sNamespace[];
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

export async function loadCluster(kc: KubeConfig): Promise<ClusterObjects> {
  const custom = kc.makeApiClient(CustomObjectsApi);
  const core = kc.makeApiClient(CoreV1Api);
  const configs: Config[] = [];
  const invalid: InvalidObject[] = [];
  const kinds = await Promise.all(ISTIO_KINDS.map(async (kind) => ({ kind, items: await listKind(custom, KINDS[kind].group, KINDS[kind].versions, KINDS[kind].plural) })));
  for (const { kind, items } of kinds) {
    for (const raw of items) {
      const namespace = raw.metadata?.namespace ?? '';
      const name = raw.metadata?.name ?? '';
      const r = validateObject({ ...raw, kind: (raw.kind as string | undefined) ?? kind }, { file: kubeOrigin(kind, namespace, name) });
      if (r.ok) {
        const { origin: _origin, ...meta } = r.value.meta;
        configs.push({ ...r.value, meta } as Config);
      } else {
        invalid.push({ ref: { kind, namespace, name }, errors: r.errors });
      }
    }
  }
  const [svcList, podList, nsList] = await Promise.all([
    retrying(() => core.listServiceForAllNamespaces()),
    retrying(() => core.listPodForAllNamespaces()),
    retrying(() => core.listNamespace()),
  ]);
  const services: K8sService[] = svcList.items.map((s) => ({
    ref: { kind: 'Service', namespace: s.metadata?.namespace ?? '', name: s.metadata?.name ?? '' },
    selector: s.spec?.selector,
    labels: s.metadata?.labels ?? {},
    type: s.spec?.type ?? 'ClusterIP',
    ports: (s.spec?.ports ?? []).map((p): ServicePort => ({
      name: p.name ?? '',
      ...(p.appProtocol !== undefined ? { appProtocol: p.appProtocol } : {}),
      port: p.port,
      protocol: p.protocol ?? 'TCP',
      targetPort: p.targetPort === undefined ? String(p.port) : String(p.targetPort),
    })),
  }));
  const pods: K8sPod[] = podList.items.map((p) => ({
    ref: { kind: 'Pod', namespace: p.metadata?.namespace ?? '', name: p.metadata?.name ?? '' },
    labels: p.metadata?.labels ?? {},
    annotations: p.metadata?.annotations ?? {},
    containers: (p.spec?.containers ?? []).map((c) => c.name),
    initContainers: (p.spec?.initContainers ?? []).map((c) => c.name),
    hostNetwork: p.spec?.hostNetwork === true,
  }));
  const namespaces: K8sNamespace[] = nsList.items.map((n) => ({ ref: { kind: 'Namespace', namespace: '', name: n.metadata?.name ?? '' }, labels: n.metadata?.labels ?? {} }));
  return { configs, invalid, services, pods, namespaces };
}
