import assert from 'node:assert/strict';
import { test } from 'node:test';
import { deploymentServicesAnalyzer } from './deployment-services.js';
import { analyzeLines, scenario } from './test-helper.js';

const f = (n: string): string => scenario('deployment-services', n);
const D = 'testdata/meshctl/analyze/deployment-services';

test('IST0116 when Services of the namespace selecting a meshed Deployment use one port with two protocols, at metadata.name', async () => {
  assert.deepEqual(await analyzeLines(deploymentServicesAnalyzer, [f('multiple-protocols.yaml')]), [
    `Warning [IST0116] (Deployment dns/coredns ${D}/multiple-protocols.yaml:10) This deployment coredns is associated with multiple services using port 53 but different protocols: [dns/dns-tcp dns/dns-udp]`,
  ]);
});

test('IST0137 when one targetPort is reached through two service ports', async () => {
  assert.deepEqual(await analyzeLines(deploymentServicesAnalyzer, [f('conflicting-target-ports.yaml')]), [
    `Warning [IST0137] (Deployment shop/web ${D}/conflicting-target-ports.yaml:5) This deployment web is associated with multiple services [shop/web shop/web-alt] using targetPort "8080" but different ports: [80 8000].`,
  ]);
});

test('Deployments outside the mesh (opt-out, namespace not injected, waypoint) and consistent Services: nothing', async () => {
  assert.deepEqual(await analyzeLines(deploymentServicesAnalyzer, [f('not-in-mesh.yaml'), f('clean.yaml')]), []);
});
