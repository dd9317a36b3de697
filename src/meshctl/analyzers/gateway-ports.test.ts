import assert from 'node:assert/strict';
import { test } from 'node:test';
import { gatewayPortsAnalyzer } from './gateway-ports.js';
import { analyzeLines, scenario } from './test-helper.js';

const f = (n: string): string => scenario('gateway-ports', n);
const D = 'testdata/meshctl/analyze/gateway-ports';
const notOnService = (port: number): string =>
  `Warning [IST0162] (Gateway web/public ${D}/ports.yaml:8) The gateway is listening on a target port (port ${port}) that is not defined in the Service associated with its workload instances (Pod selector istio=ingressgateway). If you need to access the gateway port through the gateway Service, it will not be available.`;

test("IST0162 for server ports that are neither a TCP targetPort nor a service port of the gateway pods' Services, at the selector", async () => {
  assert.deepEqual(await analyzeLines(gatewayPortsAnalyzer, [f('ingress.yaml'), f('ports.yaml')]), [notOnService(9000), notOnService(53)]);
});

test('IST0101 selector when the Gateway selects no pod, at its first label', async () => {
  assert.deepEqual(await analyzeLines(gatewayPortsAnalyzer, [f('ingress.yaml'), f('no-pods.yaml')]), [
    `Error [IST0101] (Gateway istio-system/typo ${D}/no-pods.yaml:7) Referenced selector not found: "istio=ingresgateway"`,
  ]);
});

test('a Gateway on the service port (80) and on a targetPort (8443): nothing', async () => {
  assert.deepEqual(await analyzeLines(gatewayPortsAnalyzer, [f('ingress.yaml'), f('ok.yaml')]), []);
});
