import assert from 'node:assert/strict';
import { test } from 'node:test';
import { webhookAnalyzer } from './webhook.js';
import { analyzeLines, scenario } from './test-helper.js';

const D = 'testdata/meshctl/analyze/webhook';
const f = (n: string): string => scenario('webhook', n);

test('IST0139 for injectors that overlap (each names the other) and for a missing injector service', async () => {
  assert.deepEqual(await analyzeLines(webhookAnalyzer, [f('issues.yaml')]), [
    `Error [IST0139] (MutatingWebhookConfiguration injector-a ${D}/issues.yaml:2) Webhook overlaps with others: [injector-b/sidecar-injector.istio.io]. This may cause injection to occur twice.`,
    `Error [IST0139] (MutatingWebhookConfiguration injector-b ${D}/issues.yaml:13) Webhook overlaps with others: [injector-a/sidecar-injector.istio.io]. This may cause injection to occur twice.`,
    `Error [IST0139] (MutatingWebhookConfiguration injector-b ${D}/issues.yaml:13) Injector refers to a control plane service that does not exist: istio-system/istiod-old.`,
  ]);
});

test("disjoint default and revision injectors, and another project's webhook: nothing", async () => {
  assert.deepEqual(await analyzeLines(webhookAnalyzer, [f('ok.yaml')]), []);
});
