/**
 * JWT authentication per JWT_RULE (istiod's JwtAuthenticator, go-oidc underneath): the bearer
 * token's signature against the rule's keys, `iss` equal to the issuer, `exp` present and not
 * passed, at least one `aud` among the audiences, `sub` = `system:serviceaccount:<ns>:<sa>` →
 * `spiffe://<trust-domain>/ns/<ns>/sa/<sa>`. Asymmetric algorithms only (never `none` or HMAC).
 */
import { errors as joseErrors, jwtVerify, type JWTVerifyGetKey } from 'jose';
import { parseServiceAccountSubject, spiffeId } from '../spiffe.js';
import { authFail, authOk, bearerToken, type Authenticator } from './authenticator.js';
import { jwksKeyResolver, type JwksOptions } from './jwks.js';
import type { JwtRule } from './jwt-rule.js';

const ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'EdDSA'];

export interface JwtAuthenticatorOptions extends JwksOptions {
  readonly trustDomain: string;
}

/** Why a token failed, in words (no token content). */
function describe(err: unknown): string {
  if (err instanceof joseErrors.JWTExpired) return 'the token has expired';
  if (err instanceof joseErrors.JWTClaimValidationFailed) {
    if (err.claim === 'iss') return 'the token issuer does not match';
    if (err.claim === 'aud') return 'the token audience does not match';
    if (err.reason === 'missing') return `the token has no "${err.claim}" claim`;
    return `the token claim "${err.claim}" is invalid (${err.message})`;
  }
  if (err instanceof joseErrors.JWSSignatureVerificationFailed) return 'the token signature is invalid';
  if (err instanceof joseErrors.JWKSNoMatchingKey) return 'no key of the issuer matches the token';
  if (err instanceof joseErrors.JOSEAlgNotAllowed) return 'the token algorithm is not allowed';
  if (err instanceof joseErrors.JWSInvalid || err instanceof joseErrors.JWTInvalid) return 'the token is malformed';
  return `the token cannot be verified (${(err as Error).message})`;
}

export function jwtAuthenticator(rule: JwtRule, opts: JwtAuthenticatorOptions): Authenticator {
  const keys: JWTVerifyGetKey = jwksKeyResolver(rule, opts);
  return {
    type: 'IDTokenAuthenticator',
    async authenticate(ctx) {
      const bearer = bearerToken(ctx.metadata);
      if ('error' in bearer) return authFail(bearer.error);
      let payload;
      try {
        ({ payload } = await jwtVerify(bearer.token, keys, {
          issuer: rule.issuer,
          audience: [...rule.audiences],
          algorithms: ALGORITHMS,
          requiredClaims: ['exp', 'sub'],
        }));
      } catch (err) {
        return authFail(`failed to verify the JWT: ${describe(err)}`);
      }
      const sa = parseServiceAccountSubject(payload.sub ?? '');
      if (!sa) return authFail(`invalid sub ${JSON.stringify(payload.sub)} (want system:serviceaccount:<namespace>:<name>)`);
      return authOk({ source: 'IDToken', identities: [spiffeId(opts.trustDomain, sa.namespace, sa.serviceAccount)] });
    },
  };
}
