/**
 * The installer's inventory is kept in labels on the objects themselves, as istioctl keeps it:
 * every applied object carries Istio's owner labels (`install.operator.istio.io/owning-resource`,
 * `operator.istio.io/component`, `istio.io/rev`) and meshctl's own managed-by label. Upgrade prunes
 * the labelled objects of its revision that the new values no longer render; uninstall deletes the
 * labelled objects of a revision (or, with --purge, of every revision, CRDs included).
 */
import { collectionPath, type KubeObject, type KubeRest } from './kube-rest.js';
import type { InstallObject } from './objects.js';

export const MANAGED_BY_LABEL = 'install.meshpilot.io/managed-by';
export const MANAGED_BY_VALUE = 'meshctl';
export const OWNING_RESOURCE_LABEL = 'install.operator.istio.io/owning-resource';
export const OWNING_RESOURCE_NAMESPACE_LABEL = 'install.operator.istio.io/owning-resource-namespace';
export const COMPONENT_LABEL = 'operator.istio.io/component';
export const REVISION_LABEL = 'istio.io/rev';

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
    return (obj.release ?? obj.object.metadata.name).includes('egress') ? { label: 'EgressGateways', title: 'Egress gateways' } : { label: 'IngressGateways', title: 'Ingress gateways' };
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

/**
 * Every object on the server that carries the inventory labels of `scope`, of every kind the server
 * serves (so a kind the charts no longer render is found too). Each group is listed in its
 * preferred version; objects come back with apiVersion and kind set.
 */
export async function listInventory(rest: KubeRest, scope: InventoryScope): Promise<KubeObject[]> {
  const selector = encodeURIComponent(inventorySelector(scope));
  const resources = await rest.allResources();
  // The same kind can be served by two groups (events); list each (group, kind) once.
  const seen = new Set<string>();
  const lists = await Promise.all(
    resources
      .filter((r) => {
        const key = `${r.apiVersion}|${r.kind}`;
        if (seen.has(key)) return false;
        seen.add(key);
        return true;
      })
      .map(async (r) => {
        const list = (await rest.call('GET', `${collectionPath(r)}?labelSelector=${selector}`)) as { items?: KubeObject[] };
        return (list.items ?? []).map((o) => ({ ...o, apiVersion: r.apiVersion, kind: r.kind }));
      }),
  );
  return lists.flat();
}
