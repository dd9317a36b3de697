import { type PushContext, buildClusterName } from '../../model/index.js';

/** Where a provider sends data: the service's hostname (authority) and its outbound cluster. */
export interface ProviderTarget {
  readonly hostname: string;
  readonly cluster: string;
}

/**
 * istiod's LookupCluster: `service` is `<namespace>/<hostname>` or a hostname that only one
 * namespace has; the cluster is `outbound|<port>||<hostname>`. Undefined when no such service
 * (istiod then logs and configures nothing for the provider).
 */
export function lookupProviderCluster(push: PushContext, service: string, port: number): ProviderTarget | undefined {
  if (service === '') return undefined;
  const parts = service.split('/');
  if (parts.length === 2) {
    const [namespace = '', host = ''] = parts;
    const svc = push.services().find((s) => s.hostname === host && s.namespace === namespace);
    return svc ? { hostname: svc.hostname, cluster: buildClusterName('outbound', port, '', svc.hostname) } : undefined;
  }
  const matches = push.services().filter((s) => s.hostname === service);
  if (new Set(matches.map((s) => s.namespace)).size !== 1 || !matches[0]) return undefined;
  return { hostname: matches[0].hostname, cluster: buildClusterName('outbound', port, '', matches[0].hostname) };
}
