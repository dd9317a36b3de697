import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ProxyConfig_InboundInterceptionMode } from '../gen/mesh/v1alpha1/proxy_pb.js';
import { defaultMeshConfig, meshConfigFromYaml, mergeProxyConfig, defaultProxyConfig } from './mesh.js';
import { validateAnnotations } from './validate.js';

describe("annotation validation (istiod's AnnotationValidation)", () => {
  it('accepts what Istio accepts', () => {
    validateAnnotations({
      'sidecar.istio.io/interceptionMode': 'TPROXY',
      'status.sidecar.istio.io/port': '15020',
      'readiness.status.sidecar.istio.io/periodSeconds': '10',
      'traffic.sidecar.istio.io/includeOutboundIPRanges': '*',
      'traffic.sidecar.istio.io/excludeOutboundIPRanges': '10.0.0.0/8,fd00::/8',
      'traffic.sidecar.istio.io/includeInboundPorts': '*',
      'traffic.sidecar.istio.io/excludeInboundPorts': '',
      'traffic.sidecar.istio.io/excludeOutboundPorts': '5432, 6379',
      'traffic.sidecar.istio.io/excludeInterfaces': 'eth1,net1',
      'prometheus.istio.io/merge-metrics': 'false',
      'proxy.istio.io/config': 'concurrency: 2',
      'sidecar.istio.io/proxyCPU': '500m',
      'sidecar.istio.io/proxyMemoryLimit': '1Gi',
      'unrelated.example.com/x': '"anything"',
    });
  });

  const bad: [string, string, string][] = [
    ['sidecar.istio.io/interceptionMode', 'MAGIC', 'interceptionMode invalid, use REDIRECT,TPROXY,NONE: MAGIC'],
    ['traffic.sidecar.istio.io/includeOutboundIPRanges', '10.0.0.0/8,*', "includeIPRanges invalid: failed parsing cidr '*'"],
    ['traffic.sidecar.istio.io/excludeOutboundIPRanges', '10.0.0.1', "excludeIPRanges invalid: failed parsing cidr '10.0.0.1'"],
    [
      'traffic.sidecar.istio.io/includeInboundPorts',
      '80,http',
      "includeInboundPorts invalid: failed parsing port 'http': not a port number",
    ],
    [
      'traffic.sidecar.istio.io/excludeInboundPorts',
      '70000',
      "excludeInboundPorts invalid: failed parsing port '70000': not a port number",
    ],
    ['traffic.sidecar.istio.io/excludeOutboundPorts', '1-2', "excludeOutboundPorts invalid: failed parsing port '1-2': not a port number"],
    ['traffic.sidecar.istio.io/excludeInterfaces', 'eth0 eth1', 'invalid interface name "eth0 eth1"'],
    ['readiness.status.sidecar.istio.io/failureThreshold', '-1', 'strconv.ParseUint: parsing "-1": invalid syntax'],
    ['prometheus.istio.io/merge-metrics', 'yes', 'strconv.ParseBool: parsing "yes": invalid syntax'],
    ['sidecar.istio.io/proxyMemory', '1 GB', "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"],
  ];
  for (const [name, value, why] of bad) {
    it(`refuses ${name}=${value}`, () => {
      assert.throws(() => validateAnnotations({ [name]: value }), { message: `invalid value '${value}' for annotation '${name}': ${why}` });
    });
  }

  it('refuses a proxy.istio.io/config that is not a ProxyConfig, and lists several errors', () => {
    assert.throws(
      () => validateAnnotations({ 'proxy.istio.io/config': 'concurrency: lots' }),
      /for annotation 'proxy.istio.io\/config': failed to convert to apply proxy config: proxy config: not a ProxyConfig/,
    );
    assert.throws(() => validateAnnotations({ 'sidecar.istio.io/interceptionMode': 'X', 'status.sidecar.istio.io/port': 'y' }), {
      message: /^2 errors occurred:\n\t\* invalid value 'X'.*\n\t\* invalid value 'y'/,
    });
  });
});

describe('mesh config for injection', () => {
  it("keeps istiod's defaults where the istio ConfigMap is silent and merges defaultConfig", () => {
    const mesh = meshConfigFromYaml(
      'trustDomain: example.org\ndefaultConfig:\n  discoveryAddress: meshpilot.mesh.svc:15012\n  proxyMetadata:\n    A: "1"\n',
      'ConfigMap istio-system/istio key mesh',
    );
    assert.equal(mesh.trustDomain, 'example.org');
    assert.equal(mesh.proxyListenPort, 15001);
    assert.equal(mesh.enablePrometheusMerge, true);
    assert.equal(mesh.defaultConfig?.discoveryAddress, 'meshpilot.mesh.svc:15012');
    assert.equal(mesh.defaultConfig?.statusPort, 15020, 'defaultConfig merges into the default ProxyConfig');
    assert.deepEqual(mesh.defaultConfig?.proxyMetadata, { A: '1' });
    assert.equal(defaultMeshConfig().defaultConfig?.discoveryAddress, 'istiod.istio-system.svc:15012');
  });

  it('merges proxy.istio.io/config over the mesh defaultConfig: proxyMetadata key by key', () => {
    const base = defaultProxyConfig();
    base.proxyMetadata = { A: '1', B: '2' };
    const merged = mergeProxyConfig(base, 'interceptionMode: TPROXY\nproxyMetadata:\n  B: "3"\n', 'annotation');
    assert.equal(merged.interceptionMode, ProxyConfig_InboundInterceptionMode.TPROXY);
    assert.deepEqual(merged.proxyMetadata, { A: '1', B: '3' });
    assert.deepEqual(base.proxyMetadata, { A: '1', B: '2' }, 'the base is not changed');
  });

  it('names the source of a bad mesh config', () => {
    assert.throws(() => meshConfigFromYaml('trustDomain: [1]', 'ConfigMap x/istio key mesh'), {
      message: /^ConfigMap x\/istio key mesh: not a MeshConfig/,
    });
    assert.throws(() => meshConfigFromYaml('- a', 'ConfigMap x/istio key mesh'), {
      message: 'ConfigMap x/istio key mesh: must be a mapping',
    });
  });
});
