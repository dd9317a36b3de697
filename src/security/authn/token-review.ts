/**
 * The slot for Kubernetes service-account tokens (istiod's KubeJWTAuthenticator): the token is
 * checked by the API server's TokenReview, which the Kubernetes integration supplies as a
 * `TokenReviewer` (src/security/kube/token-reviewer.ts); this module decides the audiences to ask
 * for and maps the answer to a caller, as istiod does:
 *
 * - a token with an `aud` claim (every TokenRequest / projected token) is reviewed for the
 *   configured audiences (TOKEN_AUDIENCES, istio-ca); an unbound legacy token (no `aud`) is
 *   reviewed without audiences unless REQUIRE_3P_TOKEN is set;
 * - the review must be authenticated, without error, for a user in `system:serviceaccounts` named
 *   `system:serviceaccount:<ns>:<sa>`; the identity is `spiffe://<td>/ns/<ns>/sa/<sa>` from the
 *   review, never from the token's own claims or the CSR;
 * - beyond istiod: when audiences were asked for, `status.audiences` must name one of them
 *   (the TokenReview API's advice, so an API server that ignores audiences cannot pass a token
 *   meant for someone else).
 */
import { parseServiceAccountSubject, spiffeId } from '../spiffe.js';
import { authFail, authOk, bearerToken, type Authenticator } from './authenticator.js';

export interface TokenReviewResult {
  readonly authenticated: boolean;
  /** `system:serviceaccount:<ns>:<sa>` for a service-account token. */
  readonly username?: string;
  readonly groups?: readonly string[];
  /** status.user.extra: `authentication.kubernetes.io/pod-name`, `…/pod-uid` for pod-bound tokens. */
  readonly extra?: Readonly<Record<string, readonly string[]>>;
  /** status.audiences: the requested audiences the token is valid for. */
  readonly audiences?: readonly string[];
  readonly error?: string;
}

/** Reviews a token against the API server of `clusterId` (the caller's ClusterID metadata, if any). */
export type TokenReviewer = (token: string, audiences: readonly string[], clusterId: string | undefined) => Promise<TokenReviewResult>;

export interface KubeTokenOptions {
  readonly trustDomain: string;
  /** Audiences a token must be issued for (istiod: TOKEN_AUDIENCES, default istio-ca). */
  readonly audiences: readonly string[];
  readonly review: TokenReviewer;
  /** REQUIRE_3P_TOKEN: review unbound tokens for the audiences too (which refuses them). */
  readonly requireThirdPartyToken?: boolean;
}

export const SERVICE_ACCOUNTS_GROUP = 'system:serviceaccounts';
export const POD_NAME_EXTRA = 'authentication.kubernetes.io/pod-name';
export const POD_UID_EXTRA = 'authentication.kubernetes.io/pod-uid';
export const NODE_NAME_EXTRA = 'authentication.kubernetes.io/node-name';

/**
 * The token's `aud` claim, unverified (only to choose the audiences to review for, as istiod's
 * ExtractJwtAud): undefined when the token is not a parseable JWT.
 */
export function unverifiedAudiences(token: string): string[] | undefined {
  const parts = token.split('.');
  if (parts.length !== 3 || parts[1] === undefined) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8')) as unknown;
    if (typeof claims !== 'object' || claims === null) return undefined;
    const aud = (claims as { aud?: unknown }).aud;
    if (aud === undefined || aud === null) return [];
    if (typeof aud === 'string') return [aud];
    return Array.isArray(aud) ? aud.filter((a): a is string => typeof a === 'string') : undefined;
  } catch {
    return undefined;
  }
}

export function kubeTokenAuthenticator(opts: KubeTokenOptions): Authenticator {
  return {
    type: 'KubeJWTAuthenticator',
    async authenticate(ctx) {
      const bearer = bearerToken(ctx.metadata);
      if ('error' in bearer) return authFail(bearer.error);
      const unbound = unverifiedAudiences(bearer.token)?.length === 0;
      const audiences = unbound && !opts.requireThirdPartyToken ? [] : opts.audiences;
      const r = await opts.review(bearer.token, audiences, ctx.clusterId);
      if (r.error) return authFail(`the token review failed: ${r.error}`);
      if (!r.authenticated) return authFail('the token review failed: the token is not authenticated');
      if (audiences.length > 0 && !(r.audiences ?? []).some((a) => audiences.includes(a))) {
        return authFail(
          `the token review did not confirm an audience of ${JSON.stringify(audiences)} (reviewed audiences ${JSON.stringify(r.audiences ?? [])})`,
        );
      }
      if (!(r.groups ?? []).includes(SERVICE_ACCOUNTS_GROUP))
        return authFail(
          `the token is not a service account (user ${JSON.stringify(r.username ?? '')} is not in ${SERVICE_ACCOUNTS_GROUP})`,
        );
      const sa = parseServiceAccountSubject(r.username ?? '');
      if (!sa) return authFail(`the token is not a service-account token (user ${JSON.stringify(r.username ?? '')})`);
      const podName = r.extra?.[POD_NAME_EXTRA]?.[0];
      const podUid = r.extra?.[POD_UID_EXTRA]?.[0];
      const node = r.extra?.[NODE_NAME_EXTRA]?.[0];
      return authOk({
        source: 'KubernetesToken',
        identities: [spiffeId(opts.trustDomain, sa.namespace, sa.serviceAccount)],
        ...(podName ? { pod: { name: podName, ...(podUid ? { uid: podUid } : {}), ...(node ? { node } : {}) } } : {}),
      });
    },
  };
}
