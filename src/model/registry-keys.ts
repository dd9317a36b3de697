/**
 * Push keys for changes of registries other than the config store (Kubernetes Services and their
 * endpoints). They ride in PushRequest.configsUpdated next to config keys (`Kind/namespace/name`),
 * as istiod puts a Kubernetes service change there under its hostname; the kinds here are not
 * Istio config kinds, so the two spellings never collide.
 *
 * - `Service/<namespace>/<hostname>`: the service itself changed (ports, addresses, added, removed);
 * - `Endpoints/<namespace>/<hostname>`: only its endpoints changed (the EDS-only path);
 * - `Ambient/<namespace>/<name>`: only what ambient's workload discovery reads changed (a pod that
 *   serves no endpoint yet, a namespace's labels): it reaches ztunnels alone.
 */
import type { RegistrySnapshot } from '../registry/index.js';

export type RegistryChangeKind = 'Service' | 'Endpoints' | 'Ambient';

export interface RegistryChangeKey {
  readonly kind: RegistryChangeKind;
  readonly namespace: string;
  /** The service's hostname; for `Ambient`, the changed object's name. */
  readonly hostname: string;
}

export const registryKey = (kind: RegistryChangeKind, namespace: string, hostname: string): string => `${kind}/${namespace}/${hostname}`;

export function parseRegistryKey(key: string): RegistryChangeKey | undefined {
  const first = key.indexOf('/');
  const kind = key.slice(0, first);
  if (first < 0 || (kind !== 'Service' && kind !== 'Endpoints' && kind !== 'Ambient')) return undefined;
  const second = key.indexOf('/', first + 1);
  if (second < 0 || second === key.length - 1) return undefined;
  return { kind, namespace: key.slice(first + 1, second), hostname: key.slice(second + 1) };
}

/** The workload addresses serving any port of `hostname` in one registry. */
export function hostAddresses(registry: RegistrySnapshot, hostname: string, namespace: string): string[] {
  const svc = registry.serviceByHost(hostname, namespace);
  if (!svc) return [];
  const out = new Set<string>();
  for (const port of svc.ports) for (const e of registry.endpoints(hostname, port.port, namespace)) out.add(e.address);
  return [...out];
}
