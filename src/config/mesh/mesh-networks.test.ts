import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseMeshNetworks } from './mesh-networks.js';

const ORIGIN = '--meshNetworks /etc/mn.yaml';
const errorOf = (text: string): string => {
  try {
    parseMeshNetworks(text, ORIGIN);
  } catch (err) {
    return (err as Error).message;
  }
  return assert.fail('expected an error');
};

describe('parseMeshNetworks', () => {
  it('reads networks, their endpoints and gateways (snake_case names too); empty is no networks', () => {
    const { meshNetworks, warnings } = parseMeshNetworks(
      `networks:
  network1:
    endpoints:
      - fromRegistry: Kubernetes
    gateways:
      - registry_service_name: istio-eastwestgateway.istio-system.svc.cluster.local
        port: 15443
  network2:
    endpoints:
      - from_cidr: 10.20.0.0/16
    gateways:
      - address: 192.0.2.20
        port: "15443"
        locality: us-east1
`,
      ORIGIN,
    );
    assert.deepEqual(warnings, []);
    assert.deepEqual(meshNetworks.networks, {
      network1: {
        endpoints: [{ fromRegistry: 'Kubernetes' }],
        gateways: [{ registryServiceName: 'istio-eastwestgateway.istio-system.svc.cluster.local', port: 15443 }],
      },
      network2: { endpoints: [{ fromCidr: '10.20.0.0/16' }], gateways: [{ address: '192.0.2.20', port: 15443, locality: 'us-east1' }] },
    });
    assert.deepEqual(parseMeshNetworks('', ORIGIN).meshNetworks.networks, {});
  });

  it('names the line and field of every invalid value, as istiod checks them', () => {
    const message = errorOf(`networks:
  n1:
    endpoints:
      - fromCidr: 10.0.0.0/33
      - fromRegistry: not_a_label
    gateways:
      - address: not an address
        port: 15443
      - registryServiceName: gw.example.com
        port: 70000
      - address: 192.0.2.1
`);
    assert.match(message, /^--meshNetworks \/etc\/mn\.yaml: /);
    assert.match(message, /line 4: networks\[n1\]\.endpoints\[0\]\.fromCidr: 10\.0\.0\.0\/33 is not a valid CIDR block/);
    assert.match(message, /line 5: networks\[n1\]\.endpoints\[1\]\.fromRegistry: invalid registry name: not_a_label/);
    assert.match(message, /line 7: networks\[n1\]\.gateways\[0\]\.address: not an address is not a valid IP address or DNS name/);
    assert.match(message, /line 10: networks\[n1\]\.gateways\[1\]\.port: port number 70000 must be in the range 1\.\.65535/);
    assert.match(message, /line 11: networks\[n1\]\.gateways\[2\]\.port: port is required/);
  });

  it('rejects both members of a oneof, wrong shapes and YAML errors with their line', () => {
    assert.match(
      errorOf('networks:\n  n1:\n    endpoints:\n      - {fromCidr: 10.0.0.0/8, fromRegistry: Kubernetes}\n'),
      /line 4: networks\[n1\]\.endpoints\[0\]: set one of fromCidr and fromRegistry, not both/,
    );
    assert.match(errorOf('networks: [a, b]\n'), /line 1: networks: must be a mapping of network name to network/);
    assert.match(errorOf('networks:\n  n1:\n    gateways: {address: 1.2.3.4}\n'), /line 3: networks\[n1\]\.gateways: must be a list/);
    assert.match(errorOf('networks:\n  n1: [\n'), /^--meshNetworks \/etc\/mn\.yaml: line \d+: not YAML/);
  });

  it('reports unknown fields as warnings with their line (istiod ignores them)', () => {
    const { meshNetworks, warnings } = parseMeshNetworks('networks:\n  n1:\n    gateway:\n      - address: 1.2.3.4\n', ORIGIN);
    assert.deepEqual(meshNetworks.networks, { n1: { endpoints: [], gateways: [] } });
    assert.equal(warnings.length, 1);
    assert.match(warnings[0]!, /^--meshNetworks \/etc\/mn\.yaml: line 3: networks\[n1\]\.gateway: unknown field, ignored/);
  });
});
