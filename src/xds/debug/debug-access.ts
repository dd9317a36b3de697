/**
 * Who may read debug state, as istiod decides it (pilot/pkg/xds/debug.go allowAuthenticatedOrLocalhost,
 * AuthorizeDebugRequest; statusgen.go / debuggen.go for the xDS debug types):
 * - HTTP debug endpoints (8080 and 15014): a loopback caller gets everything; anyone else must
 *   present a bearer token the CA's authenticators accept (401 otherwise). An identity in the
 *   system namespace (istio-system) gets everything; one in another namespace only
 *   /debug/config_dump, for proxies of its own namespace (403 for the rest).
 * - xDS debug types (istio.io/debug/syncz, istio.io/debug/config_dump): on the TLS port the
 *   stream's verified identity decides the same way (other namespaces: only their own proxies).
 *   istiod refuses them on plaintext 15010 altogether; we serve them there to loopback peers only,
 *   the same trust the plain-HTTP debug port gives loopback (so `meshctl proxy-status` works on a
 *   laptop without a CA), and nothing to a remote plaintext peer.
 */
import type { IncomingMessage } from 'node:http';
import * as grpc from '@grpc/grpc-js';
import type { Proxy } from '../../model/index.js';
import { authenticate, type Authenticator, type Caller, isLoopbackAddress, streamOriginOf } from '../../security/index.js';
import { parseSpiffeId } from '../../security/spiffe.js';

/** Everything, or only the proxies of one namespace. */
export type DebugScope = { readonly all: true } | { readonly all: false; readonly namespace: string };

export type DebugDecision =
  { readonly ok: true; readonly scope: DebugScope } | { readonly ok: false; readonly status: 401 | 403; readonly reason: string };

const ALL: DebugScope = { all: true };

/** istiod's activeNamespaceDebuggers that meshpilot serves: what a non-system identity may read. */
export const NAMESPACE_DEBUG_PATHS: ReadonlySet<string> = new Set(['/debug/config_dump']);

/** The scope an authenticated caller gets: istiod takes the namespace of its first SPIFFE identity. */
export function scopeOf(caller: Caller, systemNamespace: string): DebugScope | undefined {
  for (const raw of caller.identities) {
    const id = parseSpiffeId(raw);
    if (id) return id.namespace === systemNamespace ? ALL : { all: false, namespace: id.namespace };
  }
  return undefined;
}

export interface HttpDebugAccessOptions {
  /** istiod's namespace (POD_NAMESPACE, default istio-system). */
  readonly systemNamespace: string;
  /** The CA's authenticators (none without --secureGRPCAddr: then only loopback callers get in). */
  readonly authenticators: () => readonly Authenticator[];
}

/** Decides one HTTP debug request (path is the URL's pathname). */
export async function decideHttpDebug(req: IncomingMessage, path: string, opts: HttpDebugAccessOptions): Promise<DebugDecision> {
  const remote = req.socket.remoteAddress ?? '';
  if (isLoopbackAddress(remote)) return { ok: true, scope: ALL };
  const authorization = req.headers.authorization;
  const authenticators = opts.authenticators();
  if (authorization === undefined || authenticators.length === 0) {
    return {
      ok: false,
      status: 401,
      reason:
        authenticators.length === 0
          ? 'debug endpoints answer loopback callers only (no authenticator is configured)'
          : 'authentication required: send Authorization: Bearer <token>',
    };
  }
  const metadata = new grpc.Metadata();
  metadata.set('authorization', authorization);
  const authn = await authenticate({ metadata, peer: `${remote}:${req.socket.remotePort ?? 0}` }, authenticators);
  // As istiod: no detail in the answer (the reason goes to our log through the caller).
  if (!authn.ok) return { ok: false, status: 401, reason: `authentication failed: ${authn.reason}` };
  const scope = scopeOf(authn.caller, opts.systemNamespace);
  if (!scope) return { ok: false, status: 403, reason: `no SPIFFE identity in ${authn.caller.identities.join(', ')}` };
  if (!scope.all && !NAMESPACE_DEBUG_PATHS.has(path))
    return { ok: false, status: 403, reason: `${path} is not available to identities in namespace ${scope.namespace}` };
  return { ok: true, scope };
}

/** What an xDS debug generator may show the proxy (stream) that asked. */
export type XdsDebugAccess = (proxy: Proxy) => DebugDecision;

/** xDS debug types: the stream's verified identity (TLS), or a loopback plaintext peer. */
export function xdsDebugAccess(systemNamespace: string): XdsDebugAccess {
  return (proxy) => {
    const origin = streamOriginOf(proxy);
    if (origin?.caller) {
      const scope = scopeOf(origin.caller, systemNamespace);
      return scope ? { ok: true, scope } : { ok: false, status: 403, reason: 'the stream has no SPIFFE identity' };
    }
    if (origin?.loopback) return { ok: true, scope: ALL };
    return {
      ok: false,
      status: 401,
      reason: 'authentication required: debug types are served on the TLS port (15012) to authenticated callers, or to loopback peers',
    };
  };
}

/** Whether `scope` may see `proxy`'s state. */
export function inScope(scope: DebugScope, proxy: Pick<Proxy, 'namespace'>): boolean {
  return scope.all || proxy.namespace === scope.namespace;
}
