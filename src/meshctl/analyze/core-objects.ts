/**
 * The objects analyzers need besides served Istio config: core/v1 Services, Pods and Namespaces,
 * apps/v1 Deployments, and the Istio kinds only istioctl analyzes (EnvoyFilter, Telemetry). The
 * config parser skips them, so they are read here from the same parse (its every document with its
 * start line); the cluster loader hands its list items to the same reader.
 */
import type { ConfigOrigin, ParsedFile } from '../../config/index.js';
import { addExtraObject, emptyExtras, extraKindOf, type ExtraObjects } from './extra-kinds.js';
import type { K8sContainer, K8sDeployment, K8sNamespace, K8sObject, K8sPod, K8sService, ResourceRef, ServicePort } from './model.js';

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function stringMap(v: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (isRecord(v)) for (const [k, x] of Object.entries(v)) if (typeof x === 'string') out[k] = x;
  return out;
}

export interface CoreObjects extends ExtraObjects {
  readonly services: K8sService[];
  readonly pods: K8sPod[];
  readonly namespaces: K8sNamespace[];
  readonly deployments: K8sDeployment[];
  readonly objects: K8sObject[];
  readonly statusObjects: K8sObject[];
}

export const emptyCoreObjects = (): CoreObjects => ({
  services: [],
  pods: [],
  namespaces: [],
  deployments: [],
  objects: [],
  statusObjects: [],
  ...emptyExtras(),
});

/** Kinds without a namespace: their refs carry none, and istioctl names them `Kind name`. */
const CLUSTER_SCOPED = new Set([
  'Namespace',
  'Node',
  'MutatingWebhookConfiguration',
  'ValidatingWebhookConfiguration',
  'CustomResourceDefinition',
  'ClusterRole',
  'ClusterRoleBinding',
  'PersistentVolume',
  'StorageClass',
  'IngressClass',
  'PriorityClass',
]);

/** Istio and Gateway API config, which the config parser reads (not kept among the plain objects). */
const isMeshConfigGroup = (apiVersion: string): boolean => {
  const group = apiVersion.includes('/') ? apiVersion.slice(0, apiVersion.indexOf('/')) : '';
  return group.endsWith('istio.io') || (group.endsWith('networking.k8s.io') && group.startsWith('gateway'));
};

const names = (v: unknown): string[] => (Array.isArray(v) ? v.filter(isRecord).map((c) => String(c.name ?? '')) : []);
const containers = (v: unknown): K8sContainer[] =>
  Array.isArray(v)
    ? v.filter(isRecord).map((c) => ({ name: String(c.name ?? ''), image: typeof c.image === 'string' ? c.image : '' }))
    : [];

/**
 * Adds one object (a `List`'s items too) to `out`. `origin` is the document's file position, or
 * undefined for an object read from the cluster (messages then name it without a file).
 */
export function addCoreObject(out: CoreObjects, v: unknown, defaultNamespace: string, origin: ConfigOrigin | undefined): void {
  if (!isRecord(v)) return;
  if (v.kind === 'List' && Array.isArray(v.items)) {
    for (const item of v.items) addCoreObject(out, item, defaultNamespace, origin);
    return;
  }
  if (!isRecord(v.metadata) || typeof v.metadata.name !== 'string') return;
  const meta = v.metadata;
  const labels = stringMap(meta.labels);
  const annotations = stringMap(meta.annotations);
  const ns = typeof meta.namespace === 'string' && meta.namespace !== '' ? meta.namespace : defaultNamespace;
  const refOf = (kind: string, namespace: string): ResourceRef =>
    origin ? { kind, namespace, name: String(meta.name), origin } : { kind, namespace, name: String(meta.name) };
  const spec = isRecord(v.spec) ? v.spec : {};
  if (typeof v.kind === 'string' && typeof v.apiVersion === 'string') {
    const kind = v.kind;
    const o = { ref: refOf(kind, CLUSTER_SCOPED.has(kind) ? '' : ns), apiVersion: v.apiVersion, labels, annotations, body: v };
    if (!isMeshConfigGroup(v.apiVersion)) out.objects.push(o);
    if (isRecord(v.status)) out.statusObjects.push(o);
  }
  const extra = extraKindOf(v);
  if (extra) {
    addExtraObject(out, extra, v, ns, origin);
    return;
  }
  if (v.apiVersion === 'apps/v1' && v.kind === 'Deployment') {
    const template = isRecord(spec.template) ? spec.template : {};
    const tMeta = isRecord(template.metadata) ? template.metadata : {};
    const tSpec = isRecord(template.spec) ? template.spec : {};
    out.deployments.push({
      ref: refOf('Deployment', ns),
      labels,
      annotations,
      template: { labels: stringMap(tMeta.labels), annotations: stringMap(tMeta.annotations), containers: containers(tSpec.containers) },
    });
    return;
  }
  if (v.apiVersion !== 'v1') return;
  if (v.kind === 'Namespace') out.namespaces.push({ ref: refOf('Namespace', ''), labels, annotations });
  else if (v.kind === 'Service') {
    out.services.push({
      ref: refOf('Service', ns),
      selector: isRecord(spec.selector) ? stringMap(spec.selector) : undefined,
      ports: readPorts(spec.ports),
      labels,
      annotations,
      type: typeof spec.type === 'string' ? spec.type : 'ClusterIP',
    });
  } else if (v.kind === 'Pod') {
    out.pods.push({
      ref: refOf('Pod', ns),
      labels,
      annotations,
      containers: names(spec.containers),
      initContainers: names(spec.initContainers),
      hostNetwork: spec.hostNetwork === true,
    });
  }
}

/** Adds the objects of a file the config parser read (its documents as parsed, with their start lines) to `out`. */
export function readCoreObjects(out: CoreObjects, parsed: ParsedFile, file: string, defaultNamespace: string): void {
  for (const { value, line } of parsed.values) addCoreObject(out, value, defaultNamespace, { file, line });
}

function readPorts(v: unknown): ServicePort[] {
  if (!Array.isArray(v)) return [];
  return v.filter(isRecord).map((p) => ({
    name: typeof p.name === 'string' ? p.name : '',
    port: typeof p.port === 'number' ? p.port : Number(p.port),
    protocol: typeof p.protocol === 'string' ? p.protocol : 'TCP',
    targetPort: p.targetPort === undefined || p.targetPort === null ? String(p.port) : String(p.targetPort),
    ...(typeof p.appProtocol === 'string' ? { appProtocol: p.appProtocol } : {}),
  }));
}
