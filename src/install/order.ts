/**
 * Dependency order of an install, as istioctl applies it: what later objects need comes first —
 * Namespaces, then CRDs (waited on until Established, so CRs of them are accepted), identities and
 * RBAC, configuration, Services and the rest, workloads (waited on until rolled out), and last the
 * webhook configurations, which must not send admission calls to a server that is not ready yet.
 */

export const PHASES = ['namespaces', 'crds', 'rbac', 'config', 'services', 'workloads', 'webhooks'] as const;
export type Phase = (typeof PHASES)[number];

const PHASE_OF_KIND: Readonly<Record<string, Phase>> = {
  Namespace: 'namespaces',
  CustomResourceDefinition: 'crds',
  ServiceAccount: 'rbac',
  ClusterRole: 'rbac',
  ClusterRoleBinding: 'rbac',
  Role: 'rbac',
  RoleBinding: 'rbac',
  ConfigMap: 'config',
  Secret: 'config',
  Deployment: 'workloads',
  DaemonSet: 'workloads',
  StatefulSet: 'workloads',
  MutatingWebhookConfiguration: 'webhooks',
  ValidatingWebhookConfiguration: 'webhooks',
};

/** The phase of a kind; Services, PDBs, HPAs, CRs and any other kind go with the Services. */
export function phaseOf(kind: string): Phase {
  return PHASE_OF_KIND[kind] ?? 'services';
}

/** A stable sort by phase: objects of one phase keep the order the charts rendered them in. */
export function inApplyOrder<T>(items: readonly T[], kindOf: (t: T) => string): T[] {
  const rank = (t: T): number => PHASES.indexOf(phaseOf(kindOf(t)));
  return items
    .map((t, i) => ({ t, i, r: rank(t) }))
    .sort((a, b) => a.r - b.r || a.i - b.i)
    .map((x) => x.t);
}
