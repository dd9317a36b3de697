import assert from 'node:assert/strict';
import { test } from 'node:test';
import { gatewaySecretAnalyzer } from './gateway-secret.js';
import { analyzeLines, scenario } from './test-helper.js';

const f = (n: string): string => scenario('gateway-secret', n);
const D = 'testdata/meshctl/analyze/gateway-secret';

test("IST0101 credentialName when the Secret is not in the gateway pods' namespace (one in the Gateway's does not count), at the credentialName", async () => {
  assert.deepEqual(await analyzeLines(gatewaySecretAnalyzer, [f('pods.yaml'), f('missing.yaml')]), [
    `Error [IST0101] (Gateway web/blog ${D}/missing.yaml:11) Referenced credentialName not found: "blog-cert"`,
  ]);
});

test('IST0161 for an expired certificate and for a CA-only Secret', async () => {
  const invalid = (line: number): string =>
    `Error [IST0161] (Gateway istio-ingress/legacy ${D}/invalid.yaml:${line}) The credential referenced by the Gateway legacy in namespace istio-ingress is invalid, which can cause the traffic not to work as expected.`;
  assert.deepEqual(await analyzeLines(gatewaySecretAnalyzer, [f('pods.yaml'), f('invalid.yaml')]), [invalid(11), invalid(14)]);
});

test('IST0101 selector when no pod runs the Gateway (its credentials are then not looked up)', async () => {
  assert.deepEqual(await analyzeLines(gatewaySecretAnalyzer, [f('pods.yaml'), f('no-pods.yaml')]), [
    `Error [IST0101] (Gateway istio-system/egress ${D}/no-pods.yaml:9) Referenced selector not found: "app=egress,istio=egressgateway"`,
  ]);
});

test("a valid kubernetes.io/tls Secret in the gateway pods' namespace: nothing", async () => {
  assert.deepEqual(await analyzeLines(gatewaySecretAnalyzer, [f('pods.yaml'), f('ok.yaml')]), []);
});
