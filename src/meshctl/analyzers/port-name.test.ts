import assert from 'node:assert/strict';
import { test } from 'node:test';
import { portNameAnalyzer } from './port-name.js';
import { analyzeLines, scenario } from './test-helper.js';

const f = (n: string): string => scenario('port-name', n);

test('IST0118 at each port without a protocol prefix or appProtocol; IST0150 for ExternalName tcp ports', async () => {
  assert.deepEqual(await analyzeLines(portNameAnalyzer, [f('bad-names.yaml')]), [
    'Warning [IST0150] (Service default/legacy testdata/meshctl/analyze/port-name/bad-names.yaml:32) Port name for ExternalName service is invalid. Proxy may prevent tcp named ports and unmatched traffic for ports serving TCP protocol from being forwarded correctly',
    "Info [IST0118] (Service default/web testdata/meshctl/analyze/port-name/bad-names.yaml:12) Port name metrics (port: 9090, targetPort: 9090) doesn't follow the naming convention of Istio port.",
    "Info [IST0118] (Service default/web testdata/meshctl/analyze/port-name/bad-names.yaml:21) Port name  (port: 7000, targetPort: 7000) doesn't follow the naming convention of Istio port.",
  ]);
});

test('system namespaces and istiod are skipped; grpc-web, case-insensitive and tls prefixes are known', async () => {
  assert.deepEqual(await analyzeLines(portNameAnalyzer, [f('skipped.yaml')]), []);
});
