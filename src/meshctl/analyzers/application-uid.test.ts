import assert from 'node:assert/strict';
import { test } from 'node:test';
import { applicationUidAnalyzer } from './application-uid.js';
import { analyzeLines, scenario } from './test-helper.js';

const D = 'testdata/meshctl/analyze/application-uid';
const TEXT = 'User ID (UID) 1337 is reserved for the sidecar proxy.';

test('IST0144 for a pod-level and a container-level runAsUser 1337, on Pods and Deployments', async () => {
  assert.deepEqual(await analyzeLines(applicationUidAnalyzer, [scenario('application-uid', 'issues.yaml')]), [
    `Warning [IST0144] (Deployment shop/cart ${D}/issues.yaml:13) ${TEXT}`,
    `Warning [IST0144] (Pod shop/runs-as-proxy ${D}/issues.yaml:1) ${TEXT}`,
  ]);
});

test('the proxy container, the control plane and other UIDs: nothing', async () => {
  assert.deepEqual(await analyzeLines(applicationUidAnalyzer, [scenario('application-uid', 'ok.yaml')]), []);
});
