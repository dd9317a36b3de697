/** SPIFFE workload identities as Istio writes them: `spiffe://<trust-domain>/ns/<ns>/sa/<sa>`. */
export const SPIFFE_PREFIX = 'spiffe://';

export interface SpiffeIdentity {
  readonly trustDomain: string;
  readonly namespace: string;
  readonly serviceAccount: string;
}

// A DNS-label-ish trust domain and Kubernetes-style names; no '/', no empty parts.
const PART = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

export function spiffeId(trustDomain: string, namespace: string, serviceAccount: string): string {
  return `${SPIFFE_PREFIX}${trustDomain}/ns/${namespace}/sa/${serviceAccount}`;
}

/** The parts of an Istio SPIFFE ID, or undefined when `uri` is not one. */
export function parseSpiffeId(uri: string): SpiffeIdentity | undefined {
  if (!uri.startsWith(SPIFFE_PREFIX)) return undefined;
  const parts = uri.slice(SPIFFE_PREFIX.length).split('/');
  if (parts.length !== 5 || parts[1] !== 'ns' || parts[3] !== 'sa') return undefined;
  const [trustDomain, , namespace, , serviceAccount] = parts as [string, string, string, string, string];
  if (![trustDomain, namespace, serviceAccount].every((p) => PART.test(p))) return undefined;
  return { trustDomain, namespace, serviceAccount };
}

/** `system:serviceaccount:<ns>:<sa>` (a Kubernetes service-account token subject) → its parts. */
export function parseServiceAccountSubject(sub: string): { namespace: string; serviceAccount: string } | undefined {
  const parts = sub.split(':');
  if (parts.length !== 4 || parts[0] !== 'system' || parts[1] !== 'serviceaccount') return undefined;
  const [, , namespace, serviceAccount] = parts as [string, string, string, string];
  return PART.test(namespace) && PART.test(serviceAccount) ? { namespace, serviceAccount } : undefined;
}
