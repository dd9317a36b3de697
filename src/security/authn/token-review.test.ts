/** The KubeJWTAuthenticator's rules on TokenReview answers (the review itself is exercised against a real API server in test/e2e/kube-identity.test.ts). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import type { AuthContext } from './authenticator.js';
import { kubeTokenAuthenticator, unverifiedAudiences, type TokenReviewResult } from './token-review.js';

const jwt = (claims: Record<string, unknown>): string =>
  `${Buffer.from('{"alg":"RS256"}').toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.sig`;

function ctx(token: string): AuthContext {
  const md = new grpc.Metadata();
  md.set('authorization', `Bearer ${token}`);
  return { metadata: md, peer: 'ipv4:127.0.0.1:1' };
}

const sa = (ns: string, name: string, more: Partial<TokenReviewResult> = {}): TokenReviewResult => ({
  authenticated: true,
  username: `system:serviceaccount:${ns}:${name}`,
  groups: ['system:serviceaccounts', `system:serviceaccounts:${ns}`, 'system:authenticated'],
  audiences: ['istio-ca'],
  ...more,
});

function authenticator(
  answer: TokenReviewResult,
  opts: { requireThirdPartyToken?: boolean } = {},
): { asked: (readonly string[])[]; a: ReturnType<typeof kubeTokenAuthenticator> } {
  const asked: (readonly string[])[] = [];
  const a = kubeTokenAuthenticator({
    trustDomain: 'cluster.local',
    audiences: ['istio-ca'],
    review: (_t, aud) => {
      asked.push(aud);
      return Promise.resolve(answer);
    },
    ...opts,
  });
  return { asked, a };
}

describe('KubeJWTAuthenticator on TokenReview answers', () => {
  it('reads the aud claim without verifying (string, list, none, not a JWT)', () => {
    assert.deepEqual(unverifiedAudiences(jwt({ aud: 'istio-ca' })), ['istio-ca']);
    assert.deepEqual(unverifiedAudiences(jwt({ aud: ['a', 'b'] })), ['a', 'b']);
    assert.deepEqual(unverifiedAudiences(jwt({ sub: 'x' })), []);
    assert.equal(unverifiedAudiences('opaque'), undefined);
  });

  it('identity from the review; pod name and uid from the extras', async () => {
    const { a, asked } = authenticator(
      sa('shop', 'pay', { extra: { 'authentication.kubernetes.io/pod-name': ['pay-1'], 'authentication.kubernetes.io/pod-uid': ['u-1'] } }),
    );
    // The token's own claims name another account: the review wins.
    assert.deepEqual(await a.authenticate(ctx(jwt({ aud: ['istio-ca'], sub: 'system:serviceaccount:other:admin' }))), {
      ok: true,
      caller: { source: 'KubernetesToken', identities: ['spiffe://cluster.local/ns/shop/sa/pay'], pod: { name: 'pay-1', uid: 'u-1' } },
    });
    assert.deepEqual(asked, [['istio-ca']]);
  });

  it('unbound tokens are reviewed without audiences unless REQUIRE_3P_TOKEN', async () => {
    const lax = authenticator(sa('a', 'b', { audiences: [] }));
    assert.equal((await lax.a.authenticate(ctx(jwt({ sub: 'x' })))).ok, true);
    assert.deepEqual(lax.asked, [[]]);
    const strict = authenticator(sa('a', 'b', { audiences: [] }), { requireThirdPartyToken: true });
    assert.deepEqual(await strict.a.authenticate(ctx(jwt({ sub: 'x' }))), {
      ok: false,
      reason: 'the token review did not confirm an audience of ["istio-ca"] (reviewed audiences [])',
    });
    assert.deepEqual(strict.asked, [['istio-ca']]);
  });

  it('refuses: review error, not authenticated, audience not confirmed, not a service account, odd username', async () => {
    const bound = jwt({ aud: ['istio-ca'] });
    const reason = async (r: TokenReviewResult): Promise<string> => {
      const out = await authenticator(r).a.authenticate(ctx(bound));
      assert.equal(out.ok, false);
      return out.ok ? '' : out.reason;
    };
    assert.equal(
      await reason({ authenticated: false, error: 'token audiences ["x"] is invalid' }),
      'the token review failed: token audiences ["x"] is invalid',
    );
    assert.equal(await reason({ authenticated: false }), 'the token review failed: the token is not authenticated');
    assert.match(await reason(sa('a', 'b', { audiences: ['other'] })), /did not confirm an audience of \["istio-ca"\]/);
    assert.match(
      await reason({ authenticated: true, username: 'alice', groups: ['system:authenticated'], audiences: ['istio-ca'] }),
      /not a service account \(user "alice" is not in system:serviceaccounts\)/,
    );
    assert.match(await reason(sa('a', 'b', { username: 'system:serviceaccount:a' })), /not a service-account token/);
  });
});
