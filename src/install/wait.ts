/**
 * Readiness of installed objects, as istioctl judges it: a CRD is Established, a Deployment has its
 * replicas updated and available, a DaemonSet has its pods scheduled and available; every other
 * kind is ready once it exists. Used to wait during install and by verify-install.
 */
import type { KubeJsonObject } from '../config/sources/kube/index.js';

/** Ready, or why not (in words a user can act on). */
export type Readiness = { readonly ready: true } | { readonly ready: false; readonly reason: string };

const READY: Readiness = { ready: true };
const notReady = (reason: string): Readiness => ({ ready: false, reason });

type Status = Record<string, unknown>;
const num = (v: unknown): number => (typeof v === 'number' ? v : 0);

function crdReadiness(obj: KubeJsonObject): Readiness {
  const conditions = ((obj.status as Status | undefined)?.conditions ?? []) as { type?: string; status?: string; message?: string }[];
  const established = conditions.find((c) => c.type === 'Established');
  if (established?.status === 'True') return READY;
  return notReady(`not Established${established?.message ? `: ${established.message}` : ''}`);
}

function observed(obj: KubeJsonObject, status: Status): boolean {
  return num(status.observedGeneration) >= num(obj.metadata?.generation);
}

function deploymentReadiness(obj: KubeJsonObject): Readiness {
  const status = (obj.status ?? {}) as Status;
  const spec = (obj.spec ?? {}) as Status;
  const want = typeof spec.replicas === 'number' ? spec.replicas : 1;
  if (!observed(obj, status)) return notReady('rollout not yet observed by the deployment controller');
  const updated = num(status.updatedReplicas);
  const available = num(status.availableReplicas);
  if (updated < want) return notReady(`${updated} of ${want} replicas updated`);
  if (available < want) return notReady(`${available} of ${want} replicas available`);
  return READY;
}

function daemonSetReadiness(obj: KubeJsonObject): Readiness {
  const status = (obj.status ?? {}) as Status;
  if (!observed(obj, status)) return notReady('rollout not yet observed by the daemonset controller');
  const want = num(status.desiredNumberScheduled);
  const updated = num(status.updatedNumberScheduled);
  const available = num(status.numberAvailable);
  if (updated < want) return notReady(`${updated} of ${want} pods updated`);
  if (available < want) return notReady(`${available} of ${want} pods available`);
  return READY;
}

const CHECKS: Readonly<Record<string, (obj: KubeJsonObject) => Readiness>> = {
  CustomResourceDefinition: crdReadiness,
  Deployment: deploymentReadiness,
  StatefulSet: deploymentReadiness,
  DaemonSet: daemonSetReadiness,
};

/** Whether the install has to wait for this kind at all. */
export function hasReadiness(kind: string): boolean {
  return kind in CHECKS;
}

/** The readiness of an object as read from the server. */
export function readinessOf(obj: KubeJsonObject): Readiness {
  const check = CHECKS[obj.kind ?? ''];
  return check ? check(obj) : READY;
}
