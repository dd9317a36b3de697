/**
 * The installer's inventory is kept in labels on the objects themselves, as istioctl keeps it:
 * every applied object carries Istio's owner labels (`install.operator.istio.io/owning-resource`,
 * `operator.istio.io/component`, `istio.io/rev`) and meshctl's own managed-by label. Upgrade prunes
 * the labelled objects of its revision that the new values no longer render; uninstall deletes the
 * labelled objects of a revision (or, with --purge, of every revision, CRDs included).
 */
import { collectionPath, KubeApiError, type KubeClient } from '../kube/index.js';
import type { InstallObject } from './objects.js';
import { REVISION_LABEL } from '../config/constants.js';
import type { KubeJsonObject } from '../config/sources/kube/index.js';

export const MANAGED_BY_LABEL = 'install.meshpilot.io/managed-by';
export const MANAGED_BY_VALUE = 'meshctl';
export const OWNING_RESOURCE_LABEL = 'install.operator.istio.io/owning-resource';
export const OWNING_RESOURCE_NAMESPACE_LABEL = 'install.operator.istio.io/owning-resource-namespace';
export const COMPONENT_LABEL = 'operator.istio.io/component';

/** Istio's revision label value: the revision, or `default` for an install without one. */
export function revisionLabelValue(revision: string | undefined): string {
  return revision === undefined || revision === '' ? 'default' : revision;
}

/** An Istio operator component: its label value and the name istioctl's progress display prints. */
export interface Component {
  readonly label: string;
  readonly title: string;
}

const CHART_COMPONENTS: Readonly<Record<string, Component>> = {
  base: { label: 'Base', title: 'Istio core' },
  meshpilot: { label: 'Pilot', title: 'Istiod' },
  istiod: { label: 'Pilot', title: 'Istiod' },
  cni: { label: 'Cni', title: 'CNI' },
};

/**
 * The component an object belongs to, by chart. The gateway chart renders ingress and egress
 * gateways; istioctl counts them as two components, told apart by release (else object) name.
 */
export function componentOf(obj: InstallObject): Component {
  const known = CHART_COMPONENTS[obj.chart];
  if (known) return known;
  if (obj.chart === 'gateway' || obj.chart === 'gateways') {
    return (obj.release ?? obj.object.metadata.name).includes('egress')
      ? { label: 'EgressGateways', title: 'Egress gateways' }
      : { label: 'IngressGateways', title: 'Ingress gateways' };
  }
  return { label: obj.chart, title: obj.chart };
}

/** The IstioOperator name istioctl records as owner: `installed-state`, with `-REV` for a revision. */
export function owningResourceName(revision: string | undefined): string {
  return revision === undefined || revision === '' ? 'installed-state' : `installed-state-${revision}`;
}

/** The inventory labels of one object of an install. */
export function inventoryLabels(obj: InstallObject, revision: string | undefined, systemNamespace: string): Record<string, string> {
  return {
    [MANAGED_BY_LABEL]: MANAGED_BY_VALUE,
    [OWNING_RESOURCE_LABEL]: owningResourceName(revision),
    [OWNING_RESOURCE_NAMESPACE_LABEL]: systemNamespace,
    [COMPONENT_LABEL]: componentOf(obj).label,
    [REVISION_LABEL]: revisionLabelValue(revision),
  };
}

/** Which installed objects to look at: one revision's, or every revision's (purge). */
export type InventoryScope = { readonly revision: string | undefined } | { readonly allRevisions: true };

export function inventorySelector(scope: InventoryScope): string {
  const managed = `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`;
  return 'allRevisions' in scope ? managed : `${managed},${REVISION_LABEL}=${revisionLabelValue(scope.revision)}`;
}

/** A kind as the API names it. */
export interface KindRef {
  readonly apiVersion: string;
  readonly kind: string;
}

/**
 * The kinds the charts can render (as istioctl's list of pruned resource kinds): where inventory is
 * looked for, with the kinds of the CRDs an install created and, at apply time, the kinds rendered
 * now. A test keeps it in step with the chart templates. (Every kind the server serves would be
 * ~80 LISTs per look.)
 */
export const INVENTORY_KINDS: readonly KindRef[] = [
  ...['Namespace', 'ServiceAccount', 'ConfigMap', 'Secret', 'Service'].map((kind) => ({ apiVersion: 'v1', kind })),
  ...['Deployment', 'DaemonSet', 'StatefulSet'].map((kind) => ({ apiVersion: 'apps/v1', kind })),
  { apiVersion: 'autoscaling/v2', kind: 'HorizontalPodAutoscaler' },
  { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget' },
  { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy' },
  // The remote profile's `istiod` Service endpoints on global.remotePilotAddress.
  { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice' },
  ...['Role', 'RoleBinding', 'ClusterRole', 'ClusterRoleBinding'].map((kind) => ({ apiVersion: 'rbac.authorization.k8s.io/v1', kind })),
  ...['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration'].map((kind) => ({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind,
  })),
  { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition' },
];

/** The kinds the CRDs meshctl installed (any revision) serve: custom resources an install may have created. */
async function installedCrdKinds(rest: KubeClient): Promise<KindRef[]> {
  const info = await rest.resolve('apiextensions.k8s.io/v1', 'CustomResourceDefinition');
  if (!info) return [];
  const selector = encodeURIComponent(inventorySelector({ allRevisions: true }));
  type Crd = {
    metadata?: { deletionTimestamp?: string };
    spec?: { group?: string; names?: { kind?: string }; versions?: { name?: string; served?: boolean }[] };
  };
  const list = (await rest.call('GET', `${collectionPath(info)}?labelSelector=${selector}`)) as { items?: Crd[] };
  // A CRD being deleted takes its objects with it.
  return (list.items ?? [])
    .filter((crd) => crd.metadata?.deletionTimestamp === undefined)
    .flatMap((crd) => {
      const version = crd.spec?.versions?.find((v) => v.served !== false)?.name;
      const kind = crd.spec?.names?.kind;
      return crd.spec?.group && version && kind ? [{ apiVersion: `${crd.spec.group}/${version}`, kind }] : [];
    });
}

/**
 * Every object on the server that carries the inventory labels of `scope`: of the inventory kinds,
 * the kinds of the CRDs meshctl installed, and `alsoKinds` (a kind the server does not serve holds
 * nothing). Objects come back with apiVersion and kind set.
 */
export async function listInventory(
  rest: KubeClient,
  scope: InventoryScope,
  alsoKinds: readonly KindRef[] = [],
): Promise<KubeJsonObject[]> {
  const selector = encodeURIComponent(inventorySelector(scope));
  const kinds = new Map<string, KindRef>();
  for (const k of [...INVENTORY_KINDS, ...(await installedCrdKinds(rest)), ...alsoKinds]) kinds.set(`${k.apiVersion}|${k.kind}`, k);
  const lists = await Promise.all(
    [...kinds.values()].map(async (k) => {
      const info = await rest.resolve(k.apiVersion, k.kind);
      if (!info) return [];
      let list: { items?: KubeJsonObject[] };
      try {
        list = (await rest.call('GET', `${collectionPath(info)}?labelSelector=${selector}`)) as { items?: KubeJsonObject[] };
      } catch (err) {
        // Served when discovery was read, gone since (a CRD being deleted): it holds nothing any more.
        if (err instanceof KubeApiError && err.status === 404) return [];
        throw err;
      }
      return (list.items ?? []).map((o) => ({ ...o, apiVersion: info.apiVersion, kind: info.kind }));
    }),
  );
  return lists.flat();
}
