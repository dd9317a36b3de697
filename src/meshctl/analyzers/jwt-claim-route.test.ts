import assert from 'node:assert/strict';
import { test } from 'node:test';
import { jwtClaimRouteAnalyzer } from './jwt-claim-route.js';
import { analyzeLines, scenario } from './test-helper.js';

const f = (n: string): string => scenario('jwt-claim-route', n);

test('IST0149 for claim routing on a gateway whose pod no RequestAuthentication selects', async () => {
  assert.deepEqual(await analyzeLines(jwtClaimRouteAnalyzer, [f('claim-without-authn.yaml')]), [
    'Error [IST0149] (VirtualService default/by-group testdata/meshctl/analyze/jwt-claim-route/claim-without-authn.yaml:19) The virtual service uses the JWT claim based routing (key: @request.auth.claims.group) but found no request authentication for the gateway (istio-system/public) pod (ingressgateway-1). The request authentication must first be applied for the gateway pods to validate the JWT token and make the claims available for routing.',
  ]);
});

test('a RequestAuthentication selecting the gateway pod satisfies it', async () => {
  assert.deepEqual(await analyzeLines(jwtClaimRouteAnalyzer, [f('with-authn.yaml')]), []);
});
