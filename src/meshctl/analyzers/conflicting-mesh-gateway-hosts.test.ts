import assert from 'node:assert/strict';
import { test } from 'node:test';
import { conflictingMeshGatewayHostsAnalyzer } from './conflicting-mesh-gateway-hosts.js';
import { analyzeLines, scenario } from './test-helper.js';

const f = (n: string): string => scenario('conflicting-mesh-gateway-hosts', n);
const text =
  'The VirtualServices default/helloworld-v1,default/helloworld-v2 associated with mesh gateway define the same host */helloworld.default.svc.cluster.local which can lead to undefined behavior. This can be fixed by merging the conflicting VirtualServices into a single resource.';

test('IST0109 on both mesh VirtualServices for the same host (short and FQDN forms)', async () => {
  assert.deepEqual(await analyzeLines(conflictingMeshGatewayHostsAnalyzer, [f('two-vs.yaml'), f('gateway-only.yaml')]), [
    `Error [IST0109] (VirtualService default/helloworld-v1 testdata/meshctl/analyze/conflicting-mesh-gateway-hosts/two-vs.yaml:4) ${text}`,
    `Error [IST0109] (VirtualService default/helloworld-v2 testdata/meshctl/analyze/conflicting-mesh-gateway-hosts/two-vs.yaml:15) ${text}`,
  ]);
});

test('as istioctl: a VirtualService exported to its namespace only still clashes with those exported everywhere; each is reported once', async () => {
  assert.deepEqual(await analyzeLines(conflictingMeshGatewayHostsAnalyzer, [f('two-vs.yaml'), f('private-export.yaml')]), [
    'Error [IST0109] (VirtualService default/helloworld-private testdata/meshctl/analyze/conflicting-mesh-gateway-hosts/private-export.yaml:4) The VirtualServices default/helloworld-private,default/helloworld-v1,default/helloworld-v2 associated with mesh gateway define the same host default/helloworld.default.svc.cluster.local which can lead to undefined behavior. This can be fixed by merging the conflicting VirtualServices into a single resource.',
    `Error [IST0109] (VirtualService default/helloworld-v1 testdata/meshctl/analyze/conflicting-mesh-gateway-hosts/two-vs.yaml:4) ${text}`,
    `Error [IST0109] (VirtualService default/helloworld-v2 testdata/meshctl/analyze/conflicting-mesh-gateway-hosts/two-vs.yaml:15) ${text}`,
  ]);
});

test('gateway-only and namespace-private VirtualServices do not conflict with one mesh VirtualService', async () => {
  assert.deepEqual(await analyzeLines(conflictingMeshGatewayHostsAnalyzer, [f('gateway-only.yaml'), f('private-export.yaml')]), []);
});
