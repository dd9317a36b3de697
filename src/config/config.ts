import type { KindName, SpecByKind } from './kinds.js';

/** Where an object came from, for error messages and `meshctl analyze` origins. */
export interface ConfigOrigin {
  /** File path (file source) or a source label such as `kube`. */
  readonly file: string;
  /** 1-based line of the document's start within the file, when known. */
  readonly line?: number;
}

export interface ConfigMeta<K extends KindName = KindName> {
  readonly kind: K;
  readonly name: string;
  readonly namespace: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  /** Changes whenever the object's content changes (file sources use a content hash). */
  readonly resourceVersion: string;
  /** metadata.creationTimestamp in ms since the epoch, when the object has one (API objects do; files may). */
  readonly creationTimestamp?: number;
  /** metadata.uid, when the object has one (API objects): an ownerReference needs it. */
  readonly uid?: string;
  readonly origin?: ConfigOrigin;
}

/** One condition of an object's `status.conditions` (Istio's IstioCondition; times as RFC 3339 text). */
export interface IstioCondition {
  readonly type: string;
  /** `True`, `False` or `Unknown`. */
  readonly status: string;
  readonly lastProbeTime?: string;
  readonly lastTransitionTime?: string;
  readonly reason?: string;
  readonly message?: string;
}

/** The part of `status` meshpilot reads: WorkloadEntry conditions (`Healthy`, from the health checks). */
export interface ConfigStatus {
  readonly conditions: readonly IstioCondition[];
}

/** One validated Istio object. Immutable once in the store. */
export interface Config<K extends KindName = KindName> {
  readonly meta: ConfigMeta<K>;
  readonly spec: SpecByKind[K];
  /** Kept for WorkloadEntries only (their health); other kinds' status is not read. */
  readonly status?: ConfigStatus;
}

/** The condition of a type, if the object has one. */
export function conditionOf(c: Config, type: string): IstioCondition | undefined {
  return c.status?.conditions.find((x) => x.type === type);
}

/** Identifies an object: kind, namespace and name. */
export interface ConfigKey {
  readonly kind: KindName;
  readonly namespace: string;
  readonly name: string;
}

/** `Kind/namespace/name`: the string form used in sets and maps (istiod's ConfigKey.String()). */
export function configKeyString(k: ConfigKey): string {
  return `${k.kind}/${k.namespace}/${k.name}`;
}

export function keyOf(c: Config): ConfigKey {
  return { kind: c.meta.kind, namespace: c.meta.namespace, name: c.meta.name };
}

/** A rejected object or file: everything needed to find and fix it. */
export interface ConfigError {
  readonly origin: ConfigOrigin;
  readonly kind?: string;
  readonly namespace?: string;
  readonly name?: string;
  /** Field path inside the object, e.g. `spec.http[0].route[1].weight`. */
  readonly path?: string;
  readonly message: string;
}

export function formatConfigError(e: ConfigError): string {
  const where = e.origin.line !== undefined ? `${e.origin.file}:${e.origin.line}` : e.origin.file;
  const obj = e.kind ? ` ${e.kind} ${e.namespace ?? '?'}/${e.name ?? '?'}` : '';
  const path = e.path ? ` ${e.path}:` : ':';
  return `${where}${obj}${path} ${e.message}`;
}
