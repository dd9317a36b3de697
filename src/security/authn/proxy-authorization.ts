import type { Proxy } from '../../model/proxy.js';
import { parseSpiffeId } from '../spiffe.js';
import { callerOf } from './stream-guard.js';

/**
 * istiod's checkConnectionIdentity for streams on the secure port: some identity of the
 * authenticated caller must be in the proxy's namespace and, when the node names one, be its
 * service account — a workload cannot ask for another namespace's config. Streams that were not
 * authenticated (the plaintext port) are not checked here. Returns why a stream is refused.
 */
export function authorizeProxy(call: object, proxy: Proxy): string | undefined {
  const caller = callerOf(call);
  if (!caller) return undefined;
  const sa = typeof proxy.metadata.raw.SERVICE_ACCOUNT === 'string' ? proxy.metadata.raw.SERVICE_ACCOUNT : '';
  const ok = caller.identities.some((raw) => {
    const id = parseSpiffeId(raw);
    return id !== undefined && id.namespace === proxy.namespace && (sa === '' || id.serviceAccount === sa);
  });
  return ok ? undefined : `authorization failed: no identities (${caller.identities.join(', ')}) matched ${proxy.namespace}/${sa}`;
}
