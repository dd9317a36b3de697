import assert from 'node:assert/strict';
import { test } from 'node:test';
import { caCertificatesAnalyzer } from './ca-certificates.js';
import { analyzeLines, scenario } from './test-helper.js';

const f = (n: string): string => scenario('ca-certificates', n);

test('IST0128 for the rule policy and IST0129 per port without caCertificates', async () => {
  assert.deepEqual(await analyzeLines(caCertificatesAnalyzer, [f('no-ca.yaml')]), [
    'Warning [IST0128] (DestinationRule default/external-api testdata/meshctl/analyze/ca-certificates/no-ca.yaml:1) DestinationRule default/external-api in namespace default has TLS mode set to SIMPLE but no caCertificates are set to validate server identity for host: api.example.com',
    'Warning [IST0129] (DestinationRule default/external-api testdata/meshctl/analyze/ca-certificates/no-ca.yaml:13) DestinationRule default/external-api in namespace default has TLS mode set to MUTUAL but no caCertificates are set to validate server identity for host: api.example.com at port number:8443',
  ]);
});

test('caCertificates set, or ISTIO_MUTUAL: nothing to report', async () => {
  assert.deepEqual(await analyzeLines(caCertificatesAnalyzer, [f('ok.yaml')]), []);
});

test('a credentialName counts as the CA only on a DestinationRule with a workload selector', async () => {
  assert.deepEqual(await analyzeLines(caCertificatesAnalyzer, [scenario('ca-certificates', 'credential-name.yaml')]), [
    'Warning [IST0128] (DestinationRule shop/unselected testdata/meshctl/analyze/ca-certificates/credential-name.yaml:16) DestinationRule shop/unselected in namespace shop has TLS mode set to SIMPLE but no caCertificates are set to validate server identity for host: db.example.com',
  ]);
});
