import assert from 'node:assert/strict';
import { test } from 'node:test';
import { create, toBinary } from '@bufbuild/protobuf';
import { anyPack, AnySchema } from '@bufbuild/protobuf/wkt';
import { Cluster_DiscoveryType, Cluster_LbPolicy, ClusterSchema, type Cluster } from '../../gen/envoy/config/cluster/v3/cluster_pb.js';
import { ClusterLoadAssignmentSchema } from '../../gen/envoy/config/endpoint/v3/endpoint_pb.js';
import { RingHashSchema } from '../../gen/envoy/extensions/load_balancing_policies/ring_hash/v3/ring_hash_pb.js';
import { SdsSecretConfigSchema, SecretSchema } from '../../gen/envoy/extensions/transport_sockets/tls/v3/secret_pb.js';
import {
  CertificateValidationContextSchema,
  SubjectAltNameMatcher_SanType,
  SubjectAltNameMatcherSchema,
} from '../../gen/envoy/extensions/transport_sockets/tls/v3/common_pb.js';
import { PercentSchema } from '../../gen/envoy/type/v3/percent_pb.js';
import { durationFromMs, packAny, type Init } from '../../networking/common.js';
import { brokenRules, violationsOf } from './test-helpers.js';

function cluster(init: Init<typeof ClusterSchema> = {}): Cluster {
  return create(ClusterSchema, {
    name: 'outbound|80||reviews.default.svc.cluster.local',
    connectTimeout: durationFromMs(10_000),
    clusterDiscoveryType: { case: 'type', value: Cluster_DiscoveryType.EDS },
    edsClusterConfig: { serviceName: 'outbound|80||reviews.default.svc.cluster.local' },
    ...init,
  });
}

test('a well-formed EDS cluster breaks no rule', () => {
  assert.deepEqual(brokenRules(ClusterSchema, cluster()), []);
});

test('string.min_len and duration.gt: empty cluster name, zero connect_timeout', () => {
  const violations = violationsOf(ClusterSchema, cluster({ name: '', connectTimeout: { seconds: 0n, nanos: 0 } }));
  assert.deepEqual(
    violations.map((v) => `${v.path} ${v.rule}`),
    ['name string.min_len', 'connect_timeout duration.gt'],
  );
  assert.match(violations[0]!.message, /at least 1 characters, got 0 \(value ""\)/);
  assert.match(violations[1]!.message, /greater than 0s, got 0s/);
});

test('rules on a message field apply only when it is set: no connect_timeout is fine', () => {
  const c = cluster();
  c.connectTimeout = undefined;
  assert.deepEqual(brokenRules(ClusterSchema, c), []);
});

test('enum.defined_only on a oneof member and on a plain enum field', () => {
  const c = cluster({ clusterDiscoveryType: { case: 'type', value: 42 as Cluster_DiscoveryType }, lbPolicy: 99 as Cluster_LbPolicy });
  const violations = violationsOf(ClusterSchema, c);
  assert.deepEqual(
    violations.map((v) => `${v.path} ${v.rule}`),
    ['type enum.defined_only', 'lb_policy enum.defined_only'],
  );
  assert.match(violations[0]!.message, /envoy\.config\.cluster\.v3\.Cluster\.DiscoveryType.*got 42/);
  // A defined value passes, the proto3 default included.
  assert.deepEqual(brokenRules(ClusterSchema, cluster({ lbPolicy: Cluster_LbPolicy.ROUND_ROBIN })), []);
});

test('wrapper fields apply the wrapped rules when set (UInt64Value lte, UInt32Value gte)', () => {
  const ringHash = cluster({
    lbPolicy: Cluster_LbPolicy.RING_HASH,
    lbConfig: { case: 'ringHashLbConfig', value: { minimumRingSize: 9_000_000n } },
  });
  assert.deepEqual(brokenRules(ClusterSchema, ringHash), ['ring_hash_lb_config.minimum_ring_size uint64.lte']);
  const unset = cluster({ lbConfig: { case: 'ringHashLbConfig', value: {} } });
  assert.deepEqual(brokenRules(ClusterSchema, unset), []);
  const leastRequest = cluster({ lbConfig: { case: 'leastRequestLbConfig', value: { choiceCount: 1 } } });
  assert.deepEqual(brokenRules(ClusterSchema, leastRequest), ['least_request_lb_config.choice_count uint32.gte']);
});

test('any.required on TypedExtensionConfig, and rules inside the Any it packs', () => {
  const noConfig = cluster({
    loadBalancingPolicy: { policies: [{ typedExtensionConfig: { name: 'envoy.load_balancing_policies.ring_hash' } }] },
  });
  assert.deepEqual(brokenRules(ClusterSchema, noConfig), [
    'load_balancing_policy.policies[0].typed_extension_config.typed_config any.required',
  ]);

  const tooBig = cluster({
    loadBalancingPolicy: {
      policies: [
        {
          typedExtensionConfig: {
            name: 'envoy.load_balancing_policies.ring_hash',
            typedConfig: packAny(RingHashSchema, { minimumRingSize: 0n }),
          },
        },
      ],
    },
  });
  assert.deepEqual(brokenRules(ClusterSchema, tooBig), [
    'load_balancing_policy.policies[0].typed_extension_config.typed_config(envoy.extensions.load_balancing_policies.ring_hash.v3.RingHash).minimum_ring_size uint64.gte',
  ]);
});

test('an Any of a type the registry lacks is a violation; so is one that does not decode', () => {
  const unknown = cluster({
    typedExtensionProtocolOptions: {
      'envoy.extensions.upstreams.tcp.v3.TcpProtocolOptions': {
        typeUrl: 'type.googleapis.com/envoy.extensions.upstreams.tcp.v3.TcpProtocolOptions',
        value: new Uint8Array(),
      },
    },
  });
  const [v, ...rest] = violationsOf(ClusterSchema, unknown);
  assert.equal(rest.length, 0);
  assert.equal(v!.path, 'typed_extension_protocol_options["envoy.extensions.upstreams.tcp.v3.TcpProtocolOptions"]');
  assert.equal(v!.rule, 'any.unknown_type');
  assert.match(v!.message, /TcpProtocolOptions" is not in the validation registry/);

  const garbage = anyPack(RingHashSchema, create(RingHashSchema));
  garbage.value = new Uint8Array([0x0a, 0xff]); // field 1, length 255, but nothing follows
  const bad = cluster({ loadBalancingPolicy: { policies: [{ typedExtensionConfig: { name: 'x', typedConfig: garbage } }] } });
  assert.deepEqual(brokenRules(ClusterSchema, bad), ['load_balancing_policy.policies[0].typed_extension_config.typed_config any.decode']);
});

test('a root Any is unpacked too (what an XdsResource holds)', () => {
  const any = anyPack(ClusterSchema, cluster({ name: '' }));
  assert.deepEqual(brokenRules(AnySchema, any), ['(envoy.config.cluster.v3.Cluster).name string.min_len']);
  // Round-tripped through bytes, as the xDS cache stores it.
  assert.ok(toBinary(AnySchema, any).length > 0);
});

test('ClusterLoadAssignment: cluster_name min_len, priority lte 128, port lte 65535, weight gte 1', () => {
  const cla = create(ClusterLoadAssignmentSchema, {
    clusterName: '',
    endpoints: [
      {
        priority: 129,
        lbEndpoints: [
          {
            hostIdentifier: {
              case: 'endpoint',
              value: {
                address: {
                  address: { case: 'socketAddress', value: { address: '10.0.0.1', portSpecifier: { case: 'portValue', value: 70_000 } } },
                },
              },
            },
            loadBalancingWeight: 0,
          },
        ],
      },
    ],
  });
  assert.deepEqual(brokenRules(ClusterLoadAssignmentSchema, cla), [
    'cluster_name string.min_len',
    'endpoints[0].lb_endpoints[0].endpoint.address.socket_address.port_value uint32.lte',
    'endpoints[0].lb_endpoints[0].load_balancing_weight uint32.gte',
    'endpoints[0].priority uint32.lte',
  ]);
});

test('oneof required: a SocketAddress without a port', () => {
  const cla = create(ClusterLoadAssignmentSchema, {
    clusterName: 'c',
    endpoints: [
      {
        lbEndpoints: [
          {
            hostIdentifier: {
              case: 'endpoint',
              value: { address: { address: { case: 'socketAddress', value: { address: '10.0.0.1' } } } },
            },
          },
        ],
      },
    ],
  });
  const [v, ...rest] = violationsOf(ClusterLoadAssignmentSchema, cla);
  assert.equal(rest.length, 0);
  assert.deepEqual([v!.path, v!.rule], ['endpoints[0].lb_endpoints[0].endpoint.address.socket_address.port_specifier', 'oneof.required']);
  assert.match(v!.message, /port_value, named_port/);
});

test('Secret: SAN matcher enum not_in 0 and message.required; SdsSecretConfig name min_len', () => {
  // Secret.name itself carries no rule in Envoy's proto; the SDS reference to it does.
  assert.deepEqual(brokenRules(SecretSchema, create(SecretSchema, { name: '' })), []);
  assert.deepEqual(brokenRules(SdsSecretConfigSchema, create(SdsSecretConfigSchema, { name: '' })), ['name string.min_len']);
  const secret = create(SecretSchema, {
    name: 'ROOTCA',
    type: {
      case: 'validationContext',
      value: { matchTypedSubjectAltNames: [{ sanType: SubjectAltNameMatcher_SanType.SAN_TYPE_UNSPECIFIED }] },
    },
  });
  assert.deepEqual(brokenRules(SecretSchema, secret), [
    'validation_context.match_typed_subject_alt_names[0].san_type enum.not_in',
    'validation_context.match_typed_subject_alt_names[0].matcher message.required',
  ]);
  const good = create(SubjectAltNameMatcherSchema, {
    sanType: SubjectAltNameMatcher_SanType.URI,
    matcher: { matchPattern: { case: 'exact', value: 'spiffe://cluster.local/ns/default/sa/reviews' } },
  });
  assert.deepEqual(brokenRules(SubjectAltNameMatcherSchema, good), []);
});

test('repeated items: each SPKI pin is 44 characters', () => {
  const ctx = create(CertificateValidationContextSchema, { verifyCertificateSpki: ['A'.repeat(44), 'short', 'é'.repeat(44)] });
  // 'é' is one character but two bytes: min_len passes, max_bytes does not.
  assert.deepEqual(brokenRules(CertificateValidationContextSchema, ctx), [
    'verify_certificate_spki[1] string.min_len',
    'verify_certificate_spki[2] string.max_bytes',
  ]);
});

test('double range gte 0 lte 100 (Percent)', () => {
  assert.deepEqual(brokenRules(PercentSchema, create(PercentSchema, { value: 100.5 })), ['value double.lte']);
  assert.deepEqual(brokenRules(PercentSchema, create(PercentSchema, { value: -1 })), ['value double.gte']);
  assert.deepEqual(brokenRules(PercentSchema, create(PercentSchema, { value: 0 })), []);
  assert.match(violationsOf(PercentSchema, create(PercentSchema, { value: -1 }))[0]!.message, /inside range \[0, 100\], got -1/);
});
