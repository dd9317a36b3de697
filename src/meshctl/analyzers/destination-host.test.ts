import assert from 'node:assert/strict';
import { test } from 'node:test';
import { destinationHostAnalyzer } from './destination-host.js';
import { analyzeLines, scenario } from './test-helper.js';

const f = (n: string): string => scenario('destination-host', n);

test('IST0101 for a destination host no Service or ServiceEntry defines', async () => {
  assert.deepEqual(await analyzeLines(destinationHostAnalyzer, [f('services.yaml'), f('unknown-host.yaml')]), [
    'Error [IST0101] (VirtualService default/reviews testdata/meshctl/analyze/destination-host/unknown-host.yaml:10) Referenced host not found: "reviews.bogus"',
  ]);
});

test('IST0112 when the service has several ports and the destination names none', async () => {
  assert.deepEqual(await analyzeLines(destinationHostAnalyzer, [f('services.yaml'), f('port-required.yaml')]), [
    'Error [IST0112] (VirtualService default/ratings testdata/meshctl/analyze/destination-host/port-required.yaml:10) This VirtualService routes to a service "ratings" that exposes multiple ports [9080 9090]. Specifying a port in the destination is required to disambiguate.',
  ]);
});

test('IST0101 host:port for a port the service does not expose', async () => {
  assert.deepEqual(await analyzeLines(destinationHostAnalyzer, [f('services.yaml'), f('wrong-port.yaml')]), [
    'Error [IST0101] (VirtualService default/ratings-port testdata/meshctl/analyze/destination-host/wrong-port.yaml:11) Referenced host:port not found: "ratings.default.svc.cluster.local:7777"',
  ]);
});

test('short names, explicit ports and wildcard ServiceEntry hosts resolve', async () => {
  assert.deepEqual(await analyzeLines(destinationHostAnalyzer, [f('services.yaml'), f('ok.yaml')]), []);
});

test('without the Services file the same hosts are not found', async () => {
  const lines = await analyzeLines(destinationHostAnalyzer, [f('ok.yaml')]);
  assert.deepEqual(
    lines.map((l) => l.replace(/^.*\) /, '')),
    ['Referenced host not found: "ratings"', 'Referenced host not found: "api.example.com"', 'Referenced host not found: "reviews"'],
  );
});

test('IST0101 mirror host for a mirror to an unknown service, at the mirror host line', async () => {
  assert.deepEqual(await analyzeLines(destinationHostAnalyzer, [f('services.yaml'), f('mirror.yaml')]), [
    'Error [IST0101] (VirtualService default/mirrored testdata/meshctl/analyze/destination-host/mirror.yaml:12) Referenced mirror host not found: "reviews-shadow"',
  ]);
});

test("IST0101 host when the Service's exportTo annotation hides it from where the VirtualService is exported", async () => {
  const D = 'testdata/meshctl/analyze/destination-host';
  assert.deepEqual(await analyzeLines(destinationHostAnalyzer, [`${D}/export-to.yaml`]), [
    `Error [IST0101] (VirtualService shop/exported-elsewhere ${D}/export-to.yaml:46) Referenced host not found: "reviews"`,
    `Error [IST0101] (VirtualService web/from-web ${D}/export-to.yaml:33) Referenced host not found: "reviews.shop.svc.cluster.local"`,
  ]);
});
