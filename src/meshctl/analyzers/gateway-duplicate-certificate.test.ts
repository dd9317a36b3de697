import assert from 'node:assert/strict';
import { test } from 'node:test';
import { gatewayDuplicateCertificateAnalyzer } from './gateway-duplicate-certificate.js';
import { analyzeLines, scenario } from './test-helper.js';

const f = (n: string): string => scenario('gateway-duplicate-certificate', n);

test('IST0138 on both gateways sharing a credentialName on the same workload, at metadata.name, itself listed first', async () => {
  assert.deepEqual(await analyzeLines(gatewayDuplicateCertificateAnalyzer, [f('same-credential.yaml')]), [
    'Warning [IST0138] (Gateway default/gw-a testdata/meshctl/analyze/gateway-duplicate-certificate/same-credential.yaml:4) Duplicate certificate in multiple gateways [default/gw-a default/gw-b] may cause 404s if clients re-use HTTP2 connections.',
    'Warning [IST0138] (Gateway default/gw-b testdata/meshctl/analyze/gateway-duplicate-certificate/same-credential.yaml:16) Duplicate certificate in multiple gateways [default/gw-b default/gw-a] may cause 404s if clients re-use HTTP2 connections.',
  ]);
});

test('same certificate files: only the gateway whose selector the other contains reports', async () => {
  assert.deepEqual(await analyzeLines(gatewayDuplicateCertificateAnalyzer, [f('same-files.yaml')]), [
    'Warning [IST0138] (Gateway edge/gw-e testdata/meshctl/analyze/gateway-duplicate-certificate/same-files.yaml:4) Duplicate certificate in multiple gateways [edge/gw-e edge/gw-f] may cause 404s if clients re-use HTTP2 connections.',
  ]);
});

test('the same certificate on different gateway workloads is fine', async () => {
  assert.deepEqual(await analyzeLines(gatewayDuplicateCertificateAnalyzer, [f('different-workloads.yaml')]), []);
});
