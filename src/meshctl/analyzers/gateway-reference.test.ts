import assert from 'node:assert/strict';
import { test } from 'node:test';
import { gatewayReferenceAnalyzer } from './gateway-reference.js';
import { analyzeLines, scenario } from './test-helper.js';

const f = (n: string): string => scenario('gateway-reference', n);

test('IST0101 gateway (and IST0132, no servers) for a missing gateway, at its entry; ns/name and mesh are accepted', async () => {
  assert.deepEqual(await analyzeLines(gatewayReferenceAnalyzer, [f('gateways.yaml'), f('missing-gateway.yaml')]), [
    'Error [IST0101] (VirtualService default/bookinfo testdata/meshctl/analyze/gateway-reference/missing-gateway.yaml:8) Referenced gateway not found: "bookinfo-gateway"',
    'Warning [IST0132] (VirtualService default/bookinfo testdata/meshctl/analyze/gateway-reference/missing-gateway.yaml:8) one or more host [bookinfo.example.com] defined in VirtualService default/bookinfo not found in Gateway default/bookinfo-gateway.',
  ]);
});

test('a short gateway name is looked up in the VirtualService namespace only', async () => {
  assert.deepEqual(await analyzeLines(gatewayReferenceAnalyzer, [f('gateways.yaml'), f('wrong-namespace.yaml')]), [
    'Error [IST0101] (VirtualService default/other testdata/meshctl/analyze/gateway-reference/wrong-namespace.yaml:8) Referenced gateway not found: "shared"',
    'Warning [IST0132] (VirtualService default/other testdata/meshctl/analyze/gateway-reference/wrong-namespace.yaml:8) one or more host [*] defined in VirtualService default/other not found in Gateway default/shared.',
  ]);
});

test('IST0132 when no server host of the gateway (namespace prefixes applied) covers the VirtualService hosts', async () => {
  assert.deepEqual(await analyzeLines(gatewayReferenceAnalyzer, [f('host-not-in-gateway.yaml')]), [
    'Warning [IST0132] (VirtualService web/blog testdata/meshctl/analyze/gateway-reference/host-not-in-gateway.yaml:19) one or more host [blog.example.com] defined in VirtualService web/blog not found in Gateway web/shop.',
  ]);
});
