import assert from 'node:assert/strict';
import { test } from 'node:test';
import { k8sGatewaySelectorAnalyzer } from './k8s-gateway-selector.js';
import { analyzeLines, scenario } from './test-helper.js';

const f = (n: string): string => scenario('k8s-gateway-selector', n);
const D = 'testdata/meshctl/analyze/k8s-gateway-selector';
const msg = (kind: string, name: string, line: number, gw: string): string =>
  `Warning [IST0166] (${kind} shop/${name} ${D}/selectors.yaml:${line}) Ineffective selector on Kubernetes Gateway ${gw}. Use the TargetRef field instead.`;

test('IST0166 per Kubernetes Gateway pod a policy selects by selector (AuthorizationPolicy, RequestAuthentication, Telemetry)', async () => {
  assert.deepEqual(await analyzeLines(k8sGatewaySelectorAnalyzer, [f('gateway-pods.yaml'), f('selectors.yaml')]), [
    msg('AuthorizationPolicy', 'deny-web', 1, 'web'),
    msg('RequestAuthentication', 'jwt', 15, 'web'),
    msg('RequestAuthentication', 'jwt', 15, 'api'),
    msg('Telemetry', 'web-logs', 25, 'api'),
  ]);
});

test('targetRef, selectors of plain workloads or of another namespace, and no selector: nothing', async () => {
  assert.deepEqual(await analyzeLines(k8sGatewaySelectorAnalyzer, [f('gateway-pods.yaml'), f('clean.yaml')]), []);
});

test('IST0166 for a WasmPlugin selecting a Kubernetes Gateway pod', async () => {
  assert.deepEqual(await analyzeLines(k8sGatewaySelectorAnalyzer, [f('gateway-pods.yaml'), f('wasm.yaml')]), [
    `Warning [IST0166] (WasmPlugin shop/auth-filter ${D}/wasm.yaml:1) Ineffective selector on Kubernetes Gateway web. Use the TargetRef field instead.`,
  ]);
});
