import assert from 'node:assert/strict';
import { test } from 'node:test';
import { externalControlPlaneAnalyzer } from './external-control-plane.js';
import { analyzeLines, scenario } from './test-helper.js';

const D = 'testdata/meshctl/analyze/external-control-plane';
const f = (n: string): string => scenario('external-control-plane', n);

test('IST0163 for a blank and a malformed webhook address, IST0164 for an IP address', async () => {
  assert.deepEqual(await analyzeLines(externalControlPlaneAnalyzer, [f('issues.yaml')]), [
    `Warning [IST0163] (MutatingWebhookConfiguration istio-sidecar-injector-remote ${D}/issues.yaml:1) The hostname () that was provided for the webhook (rev.object.sidecar-injector.istio.io) to reach the ingress gateway on the external control plane cluster is blank. Traffic may not flow properly.`,
    `Warning [IST0163] (ValidatingWebhookConfiguration istio-validator-remote ${D}/issues.yaml:12) The hostname (https://[::1) that was provided for the webhook (rev.validation.istio.io) to reach the ingress gateway on the external control plane cluster was provided in an invalid format. Traffic may not flow properly.`,
    `Info [IST0164] (MutatingWebhookConfiguration istio-sidecar-injector-remote ${D}/issues.yaml:1) The address (https://10.0.0.7:15017/inject) that was provided for the webhook (rev.namespace.sidecar-injector.istio.io) to reach the ingress gateway on the external control plane cluster is an IP address. This is not recommended for a production environment.`,
  ]);
});

test("host names, services and other projects' webhooks: nothing", async () => {
  assert.deepEqual(await analyzeLines(externalControlPlaneAnalyzer, [f('ok.yaml')]), []);
});
