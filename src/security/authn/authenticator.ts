/**
 * Caller authentication for the secure gRPC server (CSR service and ADS on 15012), as istiod's
 * security.Authenticate: each authenticator looks at the request and either yields a Caller or
 * says why not; the first Caller wins; when none does, the reasons of all are reported together.
 */
import type * as grpc from '@grpc/grpc-js';
import type { PeerCertificate } from 'node:tls';

export type AuthSource = 'ClientCertificate' | 'IDToken' | 'KubernetesToken';

export interface Caller {
  readonly source: AuthSource;
  /** SPIFFE IDs the caller is entitled to (the SANs its certificate gets). */
  readonly identities: readonly string[];
  /**
   * The Pod a Kubernetes pod-bound token was issued for (TokenReview's user extras, istiod's
   * KubernetesInfo), when known; `node` is the extra the API server adds for pods bound to a node
   * (for logs: the node check reads the pod's own spec.nodeName, as istiod).
   */
  readonly pod?: { readonly name: string; readonly uid?: string; readonly node?: string };
}

/** What an authenticator may look at: no socket, no call object. */
export interface AuthContext {
  readonly metadata: grpc.Metadata;
  /** The client certificate, when the TLS handshake verified it against our roots. */
  readonly peerCertificate?: PeerCertificate;
  /** `ClusterID` metadata as istio-agent sends it (used by per-cluster token review). */
  readonly clusterId?: string;
  readonly peer: string;
}

export type AuthOutcome = { readonly ok: true; readonly caller: Caller } | { readonly ok: false; readonly reason: string };

export interface Authenticator {
  /** Name in failure messages (istiod's AuthenticatorType). */
  readonly type: string;
  /** Synchronous when nothing is fetched (a client certificate); a promise when keys or a TokenReview are. */
  authenticate(ctx: AuthContext): AuthOutcome | Promise<AuthOutcome>;
}

export const authOk = (caller: Caller): AuthOutcome => ({ ok: true, caller });
export const authFail = (reason: string): AuthOutcome => ({ ok: false, reason });

/** First success wins; otherwise one message naming every authenticator's reason. */
export async function authenticate(ctx: AuthContext, authenticators: readonly Authenticator[]): Promise<AuthOutcome> {
  const reasons: string[] = [];
  for (const a of authenticators) {
    let out: AuthOutcome;
    try {
      out = await a.authenticate(ctx);
    } catch (err) {
      out = authFail(`internal error: ${(err as Error).message}`);
    }
    if (out.ok) return out;
    reasons.push(`${a.type}: ${out.reason}`);
  }
  return authFail(reasons.length ? reasons.join('; ') : 'no authenticator is configured');
}

/** The bearer token of `authorization: Bearer <token>` (istiod's ExtractBearerToken). */
export function bearerToken(metadata: grpc.Metadata): { token: string } | { error: string } {
  const values = metadata.get('authorization');
  if (values.length === 0) return { error: 'no bearer token in the authorization metadata' };
  const v = String(values[0]);
  const m = /^Bearer\s+(\S+)\s*$/i.exec(v);
  return m ? { token: m[1]! } : { error: 'the authorization metadata is not "Bearer <token>"' };
}

/** An AuthContext from a grpc-js server call (unary or streaming). */
export function authContextFrom(call: {
  metadata: grpc.Metadata;
  getPeer(): string;
  getAuthContext(): { sslPeerCertificate?: PeerCertificate } | null;
}): AuthContext {
  const cert = call.getAuthContext()?.sslPeerCertificate;
  const cluster = call.metadata.get('clusterid')[0];
  return {
    metadata: call.metadata,
    peer: call.getPeer(),
    ...(cert ? { peerCertificate: cert } : {}),
    ...(cluster !== undefined ? { clusterId: String(cluster) } : {}),
  };
}
