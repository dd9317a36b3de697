import assert from 'node:assert/strict';
import { test } from 'node:test';
import { crdVersionAnalyzer } from './crd-version.js';
import { analyzeLines, scenario } from './test-helper.js';

const D = 'testdata/meshctl/analyze/crd-version';

test('IST0176 only for a tracked CRD below its minimum bundle version', async () => {
  assert.deepEqual(await analyzeLines(crdVersionAnalyzer, [scenario('crd-version', 'crds.yaml')]), [
    `Warning [IST0176] (CustomResourceDefinition tcproutes.gateway.networking.k8s.io ${D}/crds.yaml:1) Gateway API CRD "tcproutes.gateway.networking.k8s.io" is at version "1.5.1-rc.2" but Istio requires at least "1.6.0"; resources of this kind will not be processed. Upgrade the Gateway API CRDs to satisfy the minimum version.`,
  ]);
});
