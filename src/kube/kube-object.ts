/**
 * The one definition of a Kubernetes object as meshpilot handles it: client-node's model types
 * (V1Pod, ...) and raw JSON from the API server both fit {@link KubeObject}; code that keeps the
 * raw JSON (server-side apply, the installer) uses {@link KubeJsonObject}, which lets every other
 * field through as `unknown`.
 */

/** The metadata fields read by name. */
export interface KubeMetadata {
  readonly name?: string;
  readonly namespace?: string;
  readonly resourceVersion?: string;
  readonly labels?: Readonly<Record<string, string>>;
}

/** A Kubernetes object: its type and metadata. */
export interface KubeObject {
  readonly apiVersion?: string;
  readonly kind?: string;
  readonly metadata?: KubeMetadata;
}

/** A Kubernetes object as raw JSON: {@link KubeObject} plus any other field (metadata's too). */
export type KubeJsonObject = Omit<KubeObject, 'metadata'> & {
  readonly metadata?: KubeMetadata & { readonly [field: string]: unknown };
  readonly [field: string]: unknown;
};

/** The Kubernetes MicroTime format (RFC 3339 with microseconds) of a time, as a Lease's times are written. */
export function microTime(t: Date): string {
  return t.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}
