/**
 * The objects the installer applies, as the renderer hands them over (structurally C's
 * RenderedObject: chart, template, object), and how they are named in messages and reports.
 */
import type { KubeJsonObject } from '../config/sources/kube/index.js';

/** One rendered object: the chart and template it came from and the Kubernetes object itself. */
export interface InstallObject {
  readonly chart: string;
  /** The Helm release it belongs to (istiod, istio-ingressgateway, …), when the renderer says. */
  readonly release?: string;
  readonly template: string;
  readonly object: {
    apiVersion: string;
    kind: string;
    metadata: { name: string; namespace?: string; labels?: Record<string, string>; [k: string]: unknown };
    [k: string]: unknown;
  };
}

/** Identifies one object on the server. */
export interface ObjectRef {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  /** Undefined for cluster-scoped objects. */
  readonly namespace?: string;
}

/** `Kind namespace/name`, or `Kind name` when cluster-scoped: how every message names an object. */
export function describeRef(ref: ObjectRef): string {
  return ref.namespace !== undefined ? `${ref.kind} ${ref.namespace}/${ref.name}` : `${ref.kind} ${ref.name}`;
}

/** The API group of an apiVersion (`''` for the core group). */
export function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : apiVersion.slice(0, slash);
}

/** Identity across versions: group, kind, namespace, name (an object served in two versions is one object). */
export function identityOf(ref: ObjectRef): string {
  return `${groupOf(ref.apiVersion)}|${ref.kind}|${ref.namespace ?? ''}|${ref.name}`;
}

/** The ref of an object read from the server. */
export function refOfServerObject(obj: KubeJsonObject): ObjectRef {
  const namespace = obj.metadata?.namespace;
  return {
    apiVersion: obj.apiVersion ?? '',
    kind: obj.kind ?? '',
    name: obj.metadata?.name ?? '',
    ...(namespace !== undefined && namespace !== '' ? { namespace } : {}),
  };
}
