import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseMeshNetworks, type ConfigKey, type KindName } from '../config/index.js';
import type { Endpoint, RegistrySnapshot, Service } from '../registry/index.js';
import { snapshotOf } from '../../test/support/config-fixture.js';
import { DEFAULT_NETWORK_SETTINGS, EndpointNetworks, networkGateways, remoteClusterNetworks, type NetworkSettings } from './networks.js';

const settings = (meshNetworks: string, extra: Partial<NetworkSettings> = {}): NetworkSettings => ({
  ...DEFAULT_NETWORK_SETTINGS,
  kubernetes: true,
  meshNetworks: parseMeshNetworks(meshNetworks, 'test').meshNetworks,
  ...extra,
});

const source = (kind: string, name: string): ConfigKey => ({ kind: kind as KindName, namespace: 'ns', name });
const endpoint = (address: string, kind: string, network = '', labels: Record<string, string> = {}): Endpoint => ({
  address,
  port: 8080,
  servicePort: 80,
  labels,
  locality: { region: '', zone: '', subzone: '' },
  weight: 1,
  serviceAccount: 'sa',
  network,
  source: source(kind, address),
});

const CIDRS = `networks:
  wide: {endpoints: [{fromCidr: 10.0.0.0/8}]}
  narrow: {endpoints: [{fromCidr: 10.1.0.0/16}]}
  v6: {endpoints: [{fromCidr: "fd00::/8"}]}
`;

describe('endpoint networks', () => {
  it("a pod's label, then the system namespace's, then meshNetworks fromRegistry, then fromCidr", () => {
    const byCidr = new EndpointNetworks(settings(CIDRS));
    assert.equal(byCidr.networkOf(endpoint('10.1.2.3', 'Pod', 'labelled')), 'labelled');
    // istiod takes the first of cidranger's matches: the shortest prefix.
    assert.equal(byCidr.networkOf(endpoint('10.1.2.3', 'Pod')), 'wide');
    assert.equal(byCidr.networkOf(endpoint('fd00::1', 'EndpointSlice')), 'v6');
    assert.equal(byCidr.networkOf(endpoint('192.168.0.1', 'Pod')), '');
    const withNamespace = new EndpointNetworks(settings(CIDRS, { systemNamespaceNetwork: 'system' }));
    assert.equal(withNamespace.networkOf(endpoint('10.1.2.3', 'Pod')), 'system');
    const fromRegistry = new EndpointNetworks(settings(`${CIDRS}  registry: {endpoints: [{fromRegistry: Kubernetes}]}\n`));
    assert.equal(fromRegistry.networkOf(endpoint('10.1.2.3', 'Pod')), 'registry');
    const otherCluster = new EndpointNetworks(
      settings(`${CIDRS}  registry: {endpoints: [{fromRegistry: Kubernetes}]}\n`, { clusterId: 'c2' }),
    );
    assert.equal(otherCluster.networkOf(endpoint('10.1.2.3', 'Pod')), 'wide');
  });

  it("a remote cluster's endpoints: its own system namespace network, then the fromRegistry naming it", () => {
    const mn = `${CIDRS}  local: {endpoints: [{fromRegistry: c1}]}\n  east: {endpoints: [{fromRegistry: c2}]}\n`;
    const base = settings(mn, { clusterId: 'c1', systemNamespaceNetwork: 'system1' });
    const snapshots = [
      { clusterId: 'c1', systemNamespaceNetwork: 'ignored' },
      { clusterId: 'c2', systemNamespaceNetwork: 'system2' },
      { clusterId: 'c3', systemNamespaceNetwork: '' },
    ] as unknown as RegistrySnapshot[];
    const clusterNetworks = remoteClusterNetworks(base, snapshots);
    assert.deepEqual([...clusterNetworks], [['c2', 'system2']], "the local cluster's label is the settings' (watched with meshNetworks)");
    const n = new EndpointNetworks(base, clusterNetworks);
    const inCluster = (clusterId: string, labels: Record<string, string> = {}): Endpoint => ({
      ...endpoint('10.1.2.3', 'Pod', '', labels),
      clusterId,
    });
    assert.equal(n.networkOf(inCluster('c1')), 'system1');
    assert.equal(n.networkOf(inCluster('c2')), 'system2');
    assert.equal(n.networkOf(inCluster('c2', { 'topology.istio.io/network': 'pod' })), 'pod');
    const noLabels = new EndpointNetworks(settings(mn, { clusterId: 'c1' }));
    assert.equal(noLabels.networkOf(inCluster('c1')), 'local');
    assert.equal(noLabels.networkOf(inCluster('c2')), 'east', "fromRegistry names the endpoint's cluster, not the control plane's");
    assert.equal(noLabels.networkOf(inCluster('c3')), 'wide');
    assert.ok(n.sameClusterNetworks(new Map([['c2', 'system2']])));
    assert.ok(!n.sameClusterNetworks(new Map([['c2', 'other']])));
  });

  it('WorkloadEntries and ServiceEntry endpoints have their own network field only; nothing without Kubernetes', () => {
    const n = new EndpointNetworks(settings(CIDRS, { systemNamespaceNetwork: 'system' }));
    assert.equal(n.networkOf(endpoint('10.1.2.3', 'WorkloadEntry', 'vm-net')), 'vm-net');
    assert.equal(n.networkOf(endpoint('10.1.2.3', 'WorkloadEntry', '', { 'topology.istio.io/network': 'x' })), '');
    assert.equal(n.networkOf(endpoint('10.1.2.3', 'ServiceEntry')), '');
    assert.equal(new EndpointNetworks(settings(CIDRS, { kubernetes: false })).networkOf(endpoint('10.1.2.3', 'Pod')), '');
  });
});

const service = (name: string, labels: Record<string, string>, ports: number[], externalAddresses?: string[]): Service => ({
  hostname: `${name}.istio-system.svc.cluster.local`,
  namespace: 'istio-system',
  ports: ports.map((port) => ({ name: `p${port}`, port, protocol: 'TCP' as const })),
  resolution: 'STATIC',
  addresses: [],
  meshExternal: false,
  exportTo: ['*'],
  source: { kind: 'Service' as KindName, namespace: 'istio-system', name },
  labels,
  ...(externalAddresses ? { externalAddresses } : {}),
});
const registry = (services: Service[]): RegistrySnapshot => ({ services }) as unknown as RegistrySnapshot;
const NET = 'topology.istio.io/network';

describe('network gateways', () => {
  it('meshNetworks addresses (no cluster), labelled Services at their external addresses, registryServiceName of this cluster', () => {
    const gws = networkGateways(
      settings(`networks:
  n1:
    gateways: [{address: 192.0.2.1, port: 15443}, {address: gw.example.com, port: 15443}]
  n2:
    endpoints: [{fromRegistry: Kubernetes}]
    gateways: [{registryServiceName: by-name.istio-system.svc.cluster.local, port: 443}]
  n3:
    endpoints: [{fromRegistry: other}]
    gateways: [{registryServiceName: other.istio-system.svc.cluster.local, port: 443}]
`),
      [
        registry([
          service('default-port', { [NET]: 'n4' }, [15443], ['192.0.2.4', 'lb.example.com']),
          service('named-port', { [NET]: 'n5', 'networking.istio.io/gatewayPort': '15444' }, [15444, 15008], ['192.0.2.5']),
          service('hbone-only', { [NET]: 'n6' }, [15008], ['192.0.2.6']),
          service('no-port', { [NET]: 'n7' }, [80], ['192.0.2.7']),
          service('no-address', { [NET]: 'n8' }, [15443]),
          service('by-name', {}, [443], ['192.0.2.2']),
          service('other', {}, [443], ['192.0.2.3']),
        ]),
      ],
    );
    assert.deepEqual(
      gws.all.map((g) => `${g.network}/${g.cluster} ${g.address}:${g.port} hbone ${g.hbonePort}`),
      [
        'n1/ 192.0.2.1:15443 hbone 0',
        'n2/Kubernetes 192.0.2.2:443 hbone 0',
        'n4/Kubernetes 192.0.2.4:15443 hbone 0',
        'n5/Kubernetes 192.0.2.5:15444 hbone 15008',
        'n6/Kubernetes 192.0.2.6:0 hbone 15008',
      ],
    );
    assert.equal(gws.multiNetwork, true);
    assert.equal(gws.scaleFactor, 1);
  });

  it('a gateway named by a host name is at each address it resolved to, and none before; the names are reported', () => {
    const mesh = `networks:
  n1:
    gateways: [{address: gw.example.com, port: 15443}, {address: 192.0.2.1, port: 15443}]
`;
    const registries = [registry([service('lb', { [NET]: 'n4' }, [15443], ['lb.example.com'])])];
    const before = networkGateways(settings(mesh), registries);
    assert.deepEqual(
      before.all.map((g) => g.address),
      ['192.0.2.1'],
    );
    assert.deepEqual([...before.hostnames].sort(), ['gw.example.com', 'lb.example.com']);
    const resolved = networkGateways(
      settings(mesh, {
        gatewayNames: new Map([
          ['gw.example.com', ['192.0.2.10', '2001:db8::10']],
          ['lb.example.com', ['192.0.2.40']],
        ]),
      }),
      registries,
    );
    assert.deepEqual(
      resolved.all.map((g) => `${g.network}/${g.cluster} ${g.address}:${g.port}`),
      ['n1/ 192.0.2.1:15443', 'n1/ 192.0.2.10:15443', 'n4/Kubernetes 192.0.2.40:15443', 'n1/ 2001:db8::10:15443'],
    );
    assert.notEqual(resolved.key, before.key);
  });

  it('a Gateway API Gateway labelled with a network: each address on each auto-passthrough and HBONE listener', () => {
    const gateway = (name: string, labels: Record<string, string>, listeners: unknown[], addresses: unknown[]) => ({
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'Gateway',
      metadata: { name, namespace: 'istio-system', labels },
      spec: { gatewayClassName: 'istio-remote', addresses, listeners },
    });
    const tls = (name: string, port: number, options?: Record<string, string>) => ({
      name,
      port,
      protocol: 'TLS',
      tls: { mode: 'Passthrough', ...(options ? { options } : {}) },
    });
    const config = snapshotOf([
      gateway(
        'ew',
        { [NET]: 'n6' },
        [
          tls('mtls', 15443),
          tls('other', 15444),
          tls('opted', 16443, { 'gateway.istio.io/listener-protocol': 'auto-passthrough' }),
          { name: 'hbone', port: 15008, protocol: 'HBONE' },
          { name: 'http', port: 80, protocol: 'HTTP' },
        ],
        [
          { type: 'IPAddress', value: '192.0.2.61' },
          { type: 'NamedAddress', value: 'ignored' },
        ],
      ),
      gateway(
        'by-label-port',
        { [NET]: 'n7', 'networking.istio.io/gatewayPort': '15444' },
        [tls('a', 15443), tls('b', 15444)],
        [{ type: 'IPAddress', value: '192.0.2.71' }],
      ),
      gateway('no-network', {}, [tls('mtls', 15443)], [{ type: 'IPAddress', value: '192.0.2.81' }]),
    ]).list('KubernetesGateway');
    const show = (s: NetworkSettings) =>
      networkGateways(s, [], config).all.map((g) => `${g.network}/${g.cluster} ${g.address}:${g.port} hbone ${g.hbonePort}`);
    assert.deepEqual(show(settings('networks: {}')), [
      'n6/Kubernetes 192.0.2.61:15008 hbone 15008',
      'n6/Kubernetes 192.0.2.61:15443 hbone 0',
      'n6/Kubernetes 192.0.2.61:16443 hbone 0',
      'n7/Kubernetes 192.0.2.71:15444 hbone 0',
    ]);
    assert.deepEqual(show(settings('networks: {}', { gatewayApi: false })), []);
  });

  it("a remote cluster's gateway Services are in that cluster; its registryServiceName by the fromRegistry naming it", () => {
    const gws = networkGateways(
      settings(
        `networks:
  n2:
    endpoints: [{fromRegistry: c2}]
    gateways: [{registryServiceName: by-name.istio-system.svc.cluster.local, port: 443}]
`,
        { clusterId: 'c1' },
      ),
      [
        {
          ...registry([service('ew', { [NET]: 'n1' }, [15443], ['192.0.2.1']), service('by-name', {}, [443], ['192.0.2.9'])]),
          clusterId: 'c1',
        },
        {
          ...registry([service('ew', { [NET]: 'n2' }, [15443], ['192.0.2.2']), service('by-name', {}, [443], ['192.0.2.3'])]),
          clusterId: 'c2',
        },
      ],
    );
    assert.deepEqual(
      gws.all.map((g) => `${g.network}/${g.cluster} ${g.address}:${g.port}`),
      ['n1/c1 192.0.2.1:15443', 'n2/c2 192.0.2.2:15443', 'n2/c2 192.0.2.3:443'],
    );
  });

  it('prefers the gateways of the endpoint cluster; weights scale by the lcm of counts per network and per network+cluster', () => {
    const gws = networkGateways(
      settings('networks: {n1: {gateways: [{address: 192.0.2.1, port: 15443}, {address: 192.0.2.2, port: 15443}]}}'),
      [registry([service('a', { [NET]: 'n1' }, [15443], ['192.0.2.3', '192.0.2.4', '192.0.2.5'])])],
    );
    assert.deepEqual(
      gws.forNetwork('n1', 'Kubernetes').map((g) => g.address),
      ['192.0.2.3', '192.0.2.4', '192.0.2.5'],
    );
    assert.deepEqual(
      gws.forNetwork('n1', 'elsewhere').map((g) => g.address),
      ['192.0.2.1', '192.0.2.2', '192.0.2.3', '192.0.2.4', '192.0.2.5'],
    );
    // lcm(5 in n1, 2 in n1/"", 3 in n1/Kubernetes) = 30.
    assert.equal(gws.scaleFactor, 30);
    assert.equal(networkGateways(DEFAULT_NETWORK_SETTINGS, []).multiNetwork, false);
  });
});
