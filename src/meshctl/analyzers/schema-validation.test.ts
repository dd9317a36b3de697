import assert from 'node:assert/strict';
import { test } from 'node:test';
import { schemaValidationAnalyzer } from './schema-validation.js';
import { analyzeLines, scenario } from './test-helper.js';

const f = (n: string): string => scenario('schema-validation', n);

test('IST0106 for each validation error of each rejected document, valid documents untouched', async () => {
  const lines = await analyzeLines(schemaValidationAnalyzer, [
    f('invalid-weight.yaml'),
    f('no-servers.yaml'),
    f('unknown-field.yaml'),
    f('valid.yaml'),
  ]);
  assert.deepEqual(lines, [
    'Error [IST0106] (DestinationRule default/typo testdata/meshctl/analyze/schema-validation/unknown-field.yaml:7) Schema validation error: spec.trafficPolicyy: unknown field "trafficPolicyy"',
    'Error [IST0106] (Gateway default/empty-gw testdata/meshctl/analyze/schema-validation/no-servers.yaml:7) Schema validation error: spec.servers: gateway must have at least one server',
    'Error [IST0106] (VirtualService default/bad-weight testdata/meshctl/analyze/schema-validation/invalid-weight.yaml:11) Schema validation error: spec.http[0].route[0].weight: weight -5 < 0',
  ]);
});

test('no IST0106 for a valid file', async () => {
  assert.deepEqual(await analyzeLines(schemaValidationAnalyzer, [f('valid.yaml')]), []);
});

const w = (n: string): string => scenario('schema-warning', n);

test('IST0133 for each validation warning, at its field, for accepted and rejected documents alike', async () => {
  const lines = await analyzeLines(schemaValidationAnalyzer, [
    w('deprecated-fields.yaml'),
    w('gateway-tls.yaml'),
    w('sidecar-selector.yaml'),
    w('invalid-with-warning.yaml'),
    w('clean.yaml'),
  ]);
  const at = (file: string, line: number): string => `testdata/meshctl/analyze/schema-warning/${file}:${line}`;
  assert.deepEqual(lines, [
    `Error [IST0106] (DestinationRule shop/broken ${at('invalid-with-warning.yaml', 12)}) Schema validation error: spec.trafficPolicy.outlierDetection.maxEjectionPercent: percentage 120 is not in range 0..100`,
    `Warning [IST0133] (DestinationRule shop/broken ${at('invalid-with-warning.yaml', 11)}) Schema validation warning: spec.trafficPolicy.outlierDetection.consecutiveErrors: outlier detection consecutive errors is deprecated, use consecutiveGatewayErrors or consecutive5xxErrors instead`,
    `Warning [IST0133] (DestinationRule shop/old-outlier ${at('deprecated-fields.yaml', 11)}) Schema validation warning: spec.trafficPolicy.outlierDetection.consecutiveErrors: outlier detection consecutive errors is deprecated, use consecutiveGatewayErrors or consecutive5xxErrors instead`,
    `Warning [IST0133] (DestinationRule shop/old-outlier ${at('deprecated-fields.yaml', 15)}) Schema validation warning: spec.trafficPolicy.loadBalancer.consistentHash.minimumRingSize: consistent hash MinimumRingSize is deprecated, use ConsistentHashLB's RingHash configuration instead`,
    `Warning [IST0133] (Gateway shop/edge ${at('gateway-tls.yaml', 19)}) Schema validation warning: spec.servers[0].tls.httpsRedirect: tls.httpsRedirect should only be used with http servers`,
    `Warning [IST0133] (Gateway shop/edge ${at('gateway-tls.yaml', 20)}) Schema validation warning: spec.servers[0].tls.minProtocolVersion: TLS version below TLSV1_2 require setting compatible ciphers as by default they no longer include compatible ciphers.`,
    `Warning [IST0133] (Gateway shop/edge ${at('gateway-tls.yaml', 27)}) Schema validation warning: spec.servers[1].tls: PASSTHROUGH mode does not use certificates, they will be ignored`,
    `Warning [IST0133] (Gateway shop/edge ${at('gateway-tls.yaml', 30)}) Schema validation warning: spec.servers[1].tls.cipherSuites: ignoring invalid cipher suites: [NOT-A-CIPHER]`,
    `Warning [IST0133] (Gateway shop/edge ${at('gateway-tls.yaml', 30)}) Schema validation warning: spec.servers[1].tls.cipherSuites: ignoring duplicate cipher suites: [ECDHE-RSA-AES128-GCM-SHA256]`,
    `Warning [IST0133] (Sidecar shop/scoped ${at('sidecar-selector.yaml', 7)}) Schema validation warning: spec.workloadSelector: sidecar: workload selector specified without labels, will be applied to all services in namespace`,
    `Warning [IST0133] (Sidecar shop/scoped ${at('sidecar-selector.yaml', 10)}) Schema validation warning: spec.egress[0].hosts: \`*/*\` host select all resources, no other hosts can be added`,
    `Warning [IST0133] (Sidecar shop/scoped ${at('sidecar-selector.yaml', 12)}) Schema validation warning: spec.egress[0].hosts[1]: duplicated egress host: ./cart.shop.svc.cluster.local`,
    `Warning [IST0133] (VirtualService shop/mirror-old ${at('deprecated-fields.yaml', 26)}) Schema validation warning: spec.gateways[0]: using legacy gatewayName format "edge.istio-system"; prefer the <namespace>/<name> format: "istio-system/edge"`,
    `Warning [IST0133] (VirtualService shop/mirror-old ${at('deprecated-fields.yaml', 34)}) Schema validation warning: spec.http[0].mirrorPercent: using deprecated setting "mirrorPercent", use "mirrorPercentage" instead`,
  ]);
});
