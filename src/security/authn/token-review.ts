/**
 * The slot for Kubernetes service-account tokens (istiod's KubeJWTAuthenticator): the token is
 * checked by the API server's TokenReview, which the Kubernetes integration supplies as a
 * `TokenReviewer`; this module only maps its answer to a caller, as istiod does.
 */
import { parseServiceAccountSubject, spiffeId } from '../spiffe.js';
import { authFail, authOk, bearerToken, type Authenticator } from './authenticator.js';

export interface TokenReviewResult {
  readonly authenticated: boolean;
  /** `system:serviceaccount:<ns>:<sa>` for a service-account token. */
  readonly username?: string;
  readonly audiences?: readonly string[];
  readonly error?: string;
}

/** Reviews a token against the API server of `clusterId` (the caller's ClusterID metadata, if any). */
export type TokenReviewer = (token: string, audiences: readonly string[], clusterId: string | undefined) => Promise<TokenReviewResult>;

export interface KubeTokenOptions {
  readonly trustDomain: string;
  /** Audiences a token must be issued for (istiod: istio-ca). */
  readonly audiences: readonly string[];
  readonly review: TokenReviewer;
}

export function kubeTokenAuthenticator(opts: KubeTokenOptions): Authenticator {
  return {
    type: 'KubeJWTAuthenticator',
    async authenticate(ctx) {
      const bearer = bearerToken(ctx.metadata);
      if ('error' in bearer) return authFail(bearer.error);
      const r = await opts.review(bearer.token, opts.audiences, ctx.clusterId);
      if (!r.authenticated) return authFail(`the token review failed${r.error ? `: ${r.error}` : ''}`);
      const sa = parseServiceAccountSubject(r.username ?? '');
      if (!sa) return authFail(`the token is not a service-account token (user ${JSON.stringify(r.username ?? '')})`);
      return authOk({ source: 'KubernetesToken', identities: [spiffeId(opts.trustDomain, sa.namespace, sa.serviceAccount)] });
    },
  };
}
