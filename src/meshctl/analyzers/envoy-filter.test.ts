import assert from 'node:assert/strict';
import { test } from 'node:test';
import { envoyFilterAnalyzer } from './envoy-filter.js';
import { schemaValidationAnalyzer } from './schema-validation.js';
import { analyzeLines, scenario } from './test-helper.js';

const f = (n: string): string => scenario('envoy-filter', n);
const D = 'testdata/meshctl/analyze/envoy-filter';
const RELATIVE =
  'This EnvoyFilter does not have a priority and has a relative patch operation set which can cause the EnvoyFilter not to be applied. Using the INSERT_FIRST of ADD option or setting the priority may help in ensuring the EnvoyFilter is applied correctly.';

test('IST0153 / IST0154: ADD and REMOVE on ROUTE_CONFIGURATION or HTTP_ROUTE, at the patch value (the object when it has none)', async () => {
  assert.deepEqual(await analyzeLines(envoyFilterAnalyzer, [f('route-level-add-remove.yaml')]), [
    `Error [IST0153] (EnvoyFilter istio-system/routes ${D}/route-level-add-remove.yaml:11) The ADD operation will be ignored when applyTo is set to ROUTE_CONFIGURATION, or HTTP_ROUTE.`,
    `Error [IST0154] (EnvoyFilter istio-system/routes ${D}/route-level-add-remove.yaml:1) The REMOVE operation will be ignored when applyTo is set to ROUTE_CONFIGURATION, or HTTP_ROUTE.`,
  ]);
});

test('IST0152 for REPLACE on a CLUSTER; a valid REPLACE without a priority is relative (IST0151)', async () => {
  assert.deepEqual(await analyzeLines(envoyFilterAnalyzer, [f('replace.yaml')]), [
    `Error [IST0152] (EnvoyFilter default/replace-cluster ${D}/replace.yaml:13) The REPLACE operation is only valid for HTTP_FILTER and NETWORK_FILTER.`,
    `Warning [IST0151] (EnvoyFilter default/replace-cluster ${D}/replace.yaml:26) ${RELATIVE}`,
  ]);
});

test('IST0155 for a relative patch of a filter an earlier EnvoyFilter patched with a proxyVersion; IST0151 for another filter', async () => {
  assert.deepEqual(await analyzeLines(envoyFilterAnalyzer, [f('proxy-version.yaml')]), [
    `Warning [IST0151] (EnvoyFilter default/b-lua ${D}/proxy-version.yaml:34) ${RELATIVE}`,
    `Warning [IST0155] (EnvoyFilter default/b-lua ${D}/proxy-version.yaml:29) This EnvoyFilter does not have a priority and has a relative patch operation (NSTERT_BEFORE/AFTER, REPLACE, MERGE, DELETE) and proxyVersion set which can cause the EnvoyFilter not to be applied during an upgrade. Using the INSERT_FIRST or ADD option or setting the priority may help in ensuring the EnvoyFilter is applied correctly.`,
  ]);
});

test('relative operations with a priority and absolute operations: nothing', async () => {
  assert.deepEqual(await analyzeLines(envoyFilterAnalyzer, [f('clean.yaml')]), []);
});

test('an EnvoyFilter that does not decode is a schema error naming the field; every EnvoyFilter gets the warning istiod gives it (IST0133)', async () => {
  const warning =
    'Schema validation warning: EnvoyFilter exposes internal implementation details that may change at any time. Prefer other APIs if possible, and exercise extreme caution, especially around upgrades.';
  assert.deepEqual(await analyzeLines(schemaValidationAnalyzer, [f('bad-field.yaml'), f('clean.yaml')]), [
    `Error [IST0106] (EnvoyFilter default/typo ${D}/bad-field.yaml:7) Schema validation error: spec.configPatches[0].applyTo: unknown value "HTTP_FILTERS"; expected one of INVALID, LISTENER, FILTER_CHAIN, NETWORK_FILTER, HTTP_FILTER, ROUTE_CONFIGURATION, VIRTUAL_HOST, HTTP_ROUTE, CLUSTER, EXTENSION_CONFIG, BOOTSTRAP, LISTENER_FILTER`,
    `Warning [IST0133] (EnvoyFilter default/typo ${D}/bad-field.yaml:1) ${warning}`,
    `Warning [IST0133] (EnvoyFilter istio-system/absolute ${D}/clean.yaml:21) ${warning}`,
    `Warning [IST0133] (EnvoyFilter istio-system/ordered ${D}/clean.yaml:2) ${warning}`,
  ]);
});
