import assert from 'node:assert/strict';
import { test } from 'node:test';
import { serviceEntryAddressesAnalyzer } from './service-entry-addresses.js';
import { analyzeLines, scenario } from './test-helper.js';
import { run } from '../test-io.js';

const f = (n: string): string => scenario('service-entry-addresses', n);

test('IST0134 for TCP and protocol-less ports without addresses', async () => {
  assert.deepEqual(await analyzeLines(serviceEntryAddressesAnalyzer, [f('tcp-no-address.yaml')]), [
    'Warning [IST0134] (ServiceEntry default/mysql testdata/meshctl/analyze/service-entry-addresses/tcp-no-address.yaml:9) ServiceEntry addresses are required for this protocol.',
    'Warning [IST0134] (ServiceEntry default/unset-protocol testdata/meshctl/analyze/service-entry-addresses/tcp-no-address.yaml:20) ServiceEntry addresses are required for this protocol.',
  ]);
});

test('HTTPS ports or addresses present: nothing to report', async () => {
  assert.deepEqual(await analyzeLines(serviceEntryAddressesAnalyzer, [f('ok.yaml')]), []);
});

test('IST0134 for a lowercase tcp port; none once the status holds allocated addresses', async () => {
  assert.deepEqual(await analyzeLines(serviceEntryAddressesAnalyzer, [f('lowercase-and-allocated.yaml')]), [
    'Warning [IST0134] (ServiceEntry default/ssh testdata/meshctl/analyze/service-entry-addresses/lowercase-and-allocated.yaml:9) ServiceEntry addresses are required for this protocol.',
  ]);
});

test('none when the mesh config auto-allocates addresses for DNS capture', async () => {
  const r = await run([
    'analyze',
    '-A',
    '--meshConfigFile',
    f('mesh-auto-allocate.yaml'),
    f('tcp-no-address.yaml'),
    f('lowercase-and-allocated.yaml'),
  ]);
  assert.doesNotMatch(r.stdout, /IST0134/);
  assert.match((await run(['analyze', '-A', f('tcp-no-address.yaml')])).stdout, /IST0134/);
});
