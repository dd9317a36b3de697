import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { REPO_ROOT } from '../../test/support/paths.js';
import { ANNOTATIONS, captureConfigFromAnnotations, type AnnotationDefaults } from './annotations.js';
import { buildCaptureRules } from './iptables/builder.js';
import { renderRuleSet } from './iptables/restore.js';
import { assertGoldenText } from '../../test/support/cni/golden-text.js';

const V4_POD: AnnotationDefaults = { addresses: [{ address: '10.244.0.7', family: 4 }] };
const STATUS = { 'sidecar.istio.io/status': '{}' };

/**
 * The pods of istio-cni's dry-run test (cni/pkg/plugin/plugin_dryrun_test.go), whose goldens ours
 * were checked against line for line; testdata/iptables/cni-<name>.golden.
 */
const CNI_CASES: ReadonlyArray<[string, Record<string, string>, AnnotationDefaults]> = [
  ['basic', STATUS, V4_POD],
  [
    'include-exclude-ip',
    { ...STATUS, [ANNOTATIONS.includeOutboundIPRanges]: '127.0.0.0/8', [ANNOTATIONS.excludeOutboundIPRanges]: '10.0.0.0/8' },
    V4_POD,
  ],
  [
    'include-exclude-ports',
    {
      ...STATUS,
      [ANNOTATIONS.includeInboundPorts]: '1111,2222',
      [ANNOTATIONS.excludeInboundPorts]: '3333,4444',
      [ANNOTATIONS.excludeOutboundPorts]: '5555,6666',
    },
    V4_POD,
  ],
  ['tproxy', { ...STATUS, [ANNOTATIONS.interceptionMode]: 'TPROXY' }, V4_POD],
  ['dns', STATUS, { ...V4_POD, proxyEnv: { ISTIO_META_DNS_CAPTURE: 'true' } }],
  ['invalid-drop', STATUS, { ...V4_POD, proxyEnv: { INVALID_DROP: 'true' } }],
  ['custom-uid', STATUS, { ...V4_POD, proxyUid: 1000670000, proxyGid: 1000670001 }],
  ['custom-uid-tproxy', { ...STATUS, [ANNOTATIONS.interceptionMode]: 'TPROXY' }, { ...V4_POD, proxyUid: 1000670000, proxyGid: 1000670001 }],
];

const render = (a: Record<string, string>, d: AnnotationDefaults) => renderRuleSet(buildCaptureRules(captureConfigFromAnnotations(a, d)));

describe('capture config from pod annotations (istio-cni)', () => {
  for (const [name, annotations, defaults] of CNI_CASES) {
    it(`golden: ${name}`, () =>
      assertGoldenText(join(REPO_ROOT, 'testdata', 'iptables', `cni-${name}.golden`), render(annotations, defaults)));
  }

  it('uid 0 means the default proxy uid (istio-cni)', () => {
    assert.equal(render(STATUS, { ...V4_POD, proxyUid: 0 }), render(STATUS, V4_POD));
  });

  it('inbound exclusions always keep 15020,15021,15090, deduplicated', () => {
    const c = captureConfigFromAnnotations({ [ANNOTATIONS.excludeInboundPorts]: '15021, 8443,' }, V4_POD);
    assert.deepEqual(c.inboundPortsExclude, [15021, 8443, 15020, 15090]);
  });

  it('DNS capture from proxy.istio.io/config proxyMetadata (YAML or JSON) wins over the sidecar env, and means all of port 53', () => {
    const yaml = captureConfigFromAnnotations({ [ANNOTATIONS.proxyConfig]: 'proxyMetadata:\n  ISTIO_META_DNS_CAPTURE: "true"\n' }, V4_POD);
    assert.equal(yaml.redirectDns, true);
    assert.equal(yaml.captureAllDns, true);
    const json = captureConfigFromAnnotations(
      { [ANNOTATIONS.proxyConfig]: '{"proxyMetadata":{"ISTIO_META_DNS_CAPTURE":"false"}}' },
      { ...V4_POD, proxyEnv: { ISTIO_META_DNS_CAPTURE: 'true' } },
    );
    assert.equal(json.redirectDns, false);
    const other = captureConfigFromAnnotations(
      { [ANNOTATIONS.proxyConfig]: 'holdApplicationUntilProxyStarts: true' },
      { ...V4_POD, proxyEnv: { ISTIO_META_DNS_CAPTURE: 'true' } },
    );
    assert.equal(other.redirectDns, true, 'annotation without the key leaves the env in charge');
  });

  it('reroute-virtual-interfaces wins over the deprecated kubevirtInterfaces', () => {
    assert.deepEqual(captureConfigFromAnnotations({ [ANNOTATIONS.kubevirtInterfaces]: 'eth1' }, V4_POD).rerouteVirtualInterfaces, ['eth1']);
    const both = captureConfigFromAnnotations(
      { [ANNOTATIONS.kubevirtInterfaces]: 'eth1', [ANNOTATIONS.rerouteVirtualInterfaces]: 'eth2' },
      V4_POD,
    );
    assert.deepEqual(both.rerouteVirtualInterfaces, ['eth2']);
  });

  it('IPv6 from the pod addresses; ISTIO_DUAL_STACK makes a dual-stack pod program IPv6 too', () => {
    const dual: AnnotationDefaults = {
      addresses: [
        { address: '10.244.0.7', family: 4 },
        { address: 'fd00::7', family: 6 },
      ],
    };
    assert.equal(captureConfigFromAnnotations({}, dual).enableIPv6, false);
    assert.equal(captureConfigFromAnnotations({}, { ...dual, proxyEnv: { ISTIO_DUAL_STACK: 'true' } }).enableIPv6, true);
    assert.equal(captureConfigFromAnnotations({}, { addresses: [{ address: 'fd00::7', family: 6 }] }).enableIPv6, true);
  });

  it('a bad annotation is an error naming the annotation and its value', () => {
    for (const [annotations, want] of [
      [
        { [ANNOTATIONS.includeOutboundIPRanges]: '10.0.0.0/8,300.0.0.0/8' },
        /invalid traffic\.sidecar\.istio\.io\/includeOutboundIPRanges annotation value "10\.0\.0\.0\/8,300\.0\.0\.0\/8"/,
      ],
      [
        { [ANNOTATIONS.excludeInboundPorts]: '80,99999' },
        /invalid traffic\.sidecar\.istio\.io\/excludeInboundPorts annotation value ".*": port 99999 is out of range/,
      ],
      [
        { [ANNOTATIONS.interceptionMode]: 'NONE' },
        /invalid sidecar\.istio\.io\/interceptionMode annotation value "NONE": the mode must be REDIRECT or TPROXY/,
      ],
      [{ [ANNOTATIONS.excludeInterfaces]: 'eth 0' }, /traffic\.sidecar\.istio\.io\/excludeInterfaces annotation .*invalid characters/],
      [{ [ANNOTATIONS.proxyConfig]: 'proxyMetadata: [1, 2' }, /invalid proxy\.istio\.io\/config annotation: not YAML\/JSON/],
      [
        { [ANNOTATIONS.proxyConfig]: 'proxyMetadata:\n  ISTIO_META_DNS_CAPTURE: perhaps' },
        /invalid proxy\.istio\.io\/config proxyMetadata\.ISTIO_META_DNS_CAPTURE value "perhaps"/,
      ],
    ] as const) {
      assert.throws(
        () => captureConfigFromAnnotations(annotations, V4_POD),
        (err: Error & { code?: string }) => {
          assert.match(err.message, want);
          assert.equal(err.code, 'INVALID_ARGUMENT');
          return true;
        },
      );
    }
  });
});
