/**
 * From rendered template files to objects in the order `helm template` prints them
 * (pkg/release/v1/util: SplitManifests, SortManifests, InstallOrder): files by path, documents in
 * file order, then a stable sort by kind — known kinds in Helm's install order, unknown kinds
 * after them, alphabetically. Documents holding only comments or whitespace carry no object.
 */
import { decodeYamlLikeGo } from '../template/index.js';
import { isMap, type GoMap } from './values.js';
import { MeshError } from '../util/errors.js';

export const INSTALL_ORDER: readonly string[] = [
  'PriorityClass',
  'Namespace',
  'NetworkPolicy',
  'ResourceQuota',
  'LimitRange',
  'PodSecurityPolicy',
  'PodDisruptionBudget',
  'ServiceAccount',
  'Secret',
  'SecretList',
  'ConfigMap',
  'StorageClass',
  'PersistentVolume',
  'PersistentVolumeClaim',
  'CustomResourceDefinition',
  'ClusterRole',
  'ClusterRoleList',
  'ClusterRoleBinding',
  'ClusterRoleBindingList',
  'Role',
  'RoleList',
  'RoleBinding',
  'RoleBindingList',
  'Service',
  'DaemonSet',
  'Pod',
  'ReplicationController',
  'ReplicaSet',
  'Deployment',
  'HorizontalPodAutoscaler',
  'StatefulSet',
  'Job',
  'CronJob',
  'IngressClass',
  'Ingress',
  'APIService',
  'MutatingWebhookConfiguration',
  'ValidatingWebhookConfiguration',
];

export interface ManifestDoc {
  /** `<chart>/templates/<file>`, Helm's `# Source:`. */
  readonly source: string;
  /** The document as the template wrote it (what `helm template` prints under `# Source:`). */
  readonly text: string;
  readonly object: GoMap;
}

/** Helm's SplitManifests: documents separated by lines starting with `---`. */
export function splitManifests(text: string): string[] {
  return text
    .trimStart()
    .split(/^---[ \t]*/m)
    .filter((d) => d.trim() !== '')
    .map((d) => d.trimStart());
}

function kindRank(kind: string): number {
  const i = INSTALL_ORDER.indexOf(kind);
  return i === -1 ? INSTALL_ORDER.length : i;
}

/** Helm's lessByKind as a comparator (Array.prototype.sort is stable, as sort.SliceStable). */
export function compareByInstallOrder(a: string, b: string): number {
  const ra = kindRank(a);
  const rb = kindRank(b);
  if (ra !== rb) return ra - rb;
  if (ra === INSTALL_ORDER.length && a !== b) return a < b ? -1 : 1;
  return 0;
}

export function sortManifests(files: ReadonlyMap<string, string>): ManifestDoc[] {
  const docs: ManifestDoc[] = [];
  for (const source of [...files.keys()].sort()) {
    if ((source.split('/').pop() ?? '').startsWith('_')) continue;
    for (const text of splitManifests(files.get(source) ?? '')) {
      let parsed: unknown;
      try {
        parsed = decodeYamlLikeGo(text);
      } catch (err) {
        throw new MeshError('INVALID_ARGUMENT', `YAML parse error on ${source}: ${(err as Error).message}`, { cause: err });
      }
      if (parsed === null) continue;
      if (!isMap(parsed)) throw new MeshError('INVALID_ARGUMENT', `YAML parse error on ${source}: a document is not a map`);
      docs.push({ source, text, object: parsed });
    }
  }
  return docs.sort((a, b) => compareByInstallOrder(String(a.object.kind ?? ''), String(b.object.kind ?? '')));
}
