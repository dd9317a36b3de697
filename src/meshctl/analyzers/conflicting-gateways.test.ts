import assert from 'node:assert/strict';
import { test } from 'node:test';
import { conflictingGatewaysAnalyzer } from './conflicting-gateways.js';
import { analyzeLines, scenario } from './test-helper.js';

const f = (n: string): string => scenario('conflicting-gateways', n);

test('IST0145 on each gateway with the same selector and port and overlapping hosts', async () => {
  assert.deepEqual(await analyzeLines(conflictingGatewaysAnalyzer, [f('conflict.yaml')]), [
    'Error [IST0145] (Gateway ns-a/subdomain-gateway-1 testdata/meshctl/analyze/conflicting-gateways/conflict.yaml:1) Conflict with gateways ns-b/subdomain-gateway-2 (workload selector app=egressgateway, port 443, hosts *.example.com).',
    'Error [IST0145] (Gateway ns-b/subdomain-gateway-2 testdata/meshctl/analyze/conflicting-gateways/conflict.yaml:13) Conflict with gateways ns-a/subdomain-gateway-1 (workload selector app=egressgateway, port 443, hosts api.example.com).',
  ]);
});

test('different ports or disjoint hosts do not conflict', async () => {
  assert.deepEqual(await analyzeLines(conflictingGatewaysAnalyzer, [f('different-port.yaml'), f('different-hosts.yaml')]), []);
});

test('as istioctl: a selector extending the other conflicts when a pod matches both, not otherwise', async () => {
  assert.deepEqual(await analyzeLines(conflictingGatewaysAnalyzer, [f('sub-selector.yaml')]), [
    'Error [IST0145] (Gateway edge/narrow testdata/meshctl/analyze/conflicting-gateways/sub-selector.yaml:13) Conflict with gateways edge/wide (workload selector istio=ingressgateway,zone=a, port 80, hosts shop.example.com).',
    'Error [IST0145] (Gateway edge/wide testdata/meshctl/analyze/conflicting-gateways/sub-selector.yaml:2) Conflict with gateways edge/narrow (workload selector istio=ingressgateway, port 80, hosts shop.example.com).',
  ]);
  assert.deepEqual(await analyzeLines(conflictingGatewaysAnalyzer, [f('sub-selector-no-pod.yaml')]), []);
});
