import assert from 'node:assert/strict';
import { test } from 'node:test';
import { blockedCidrsAnalyzer } from './blocked-cidrs.js';
import { analyzeLines, scenario } from './test-helper.js';

const D = 'testdata/meshctl/analyze/blocked-cidrs';
const f = (n: string): string => scenario('blocked-cidrs', n);

test('IST0175 on istiod when RequestAuthentications exist and BLOCKED_CIDRS_IN_JWKS_URIS is empty', async () => {
  assert.deepEqual(await analyzeLines(blockedCidrsAnalyzer, [f('istiod.yaml'), f('request-authns.yaml')]), [
    `Warning [IST0175] (Deployment istio-system/istiod ${D}/istiod.yaml:1) BLOCKED_CIDRS_IN_JWKS_URIS is not configured but 2 RequestAuthentication resource(s) exist (shop/jwt-a, pay/jwt-b). Consider configuring it to restrict JWKS URI fetches to trusted networks.`,
  ]);
});

test('configured, or no RequestAuthentication: nothing', async () => {
  assert.deepEqual(await analyzeLines(blockedCidrsAnalyzer, [f('istiod-configured.yaml'), f('request-authns.yaml')]), []);
  assert.deepEqual(await analyzeLines(blockedCidrsAnalyzer, [f('istiod.yaml')]), []);
});
