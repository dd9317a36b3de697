import assert from 'node:assert/strict';
import { test } from 'node:test';
import { serviceEntryAddressesAnalyzer } from './service-entry-addresses.js';
import { analyzeLines, scenario } from './test-helper.js';

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
