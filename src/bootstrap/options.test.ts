import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { defaultPushThrottle } from '../xds/push-queue.js';
import { parseDiscoveryOptions } from './options.js';

const base = ['--configDir', '/tmp/x'];

describe('parseDiscoveryOptions: limits and lifecycle', () => {
  it("defaults are istiod's", () => {
    const o = parseDiscoveryOptions(base, {});
    assert.equal(o.maxRequestsPerSecond, defaultPushThrottle());
    assert.equal(o.maxWarmingStreams, defaultPushThrottle(), 'unset: admission keeps pace with the server');
    assert.equal(o.maxConcurrentStreams, 100_000);
    assert.equal(o.maxRecvMsgSize, 4 * 1024 * 1024);
    assert.equal(o.keepaliveIntervalMs, 30_000);
    assert.equal(o.keepaliveTimeoutMs, 10_000);
    assert.equal(o.maxServerConnectionAgeMs, Number.POSITIVE_INFINITY);
    assert.equal(o.maxServerConnectionAgeGraceMs, 10_000);
    assert.equal(o.shutdownDurationMs, 10_000);
  });

  it('env as istiod names it; flags win; 0 means auto', () => {
    const env = { PILOT_MAX_REQUESTS_PER_SECOND: '7.5', ISTIO_GPRC_MAXSTREAMS: '10', ISTIO_GPRC_MAXRECVMSGSIZE: '1024' };
    const o = parseDiscoveryOptions(base, env);
    assert.equal(o.maxRequestsPerSecond, 7.5);
    assert.equal(o.maxConcurrentStreams, 10);
    assert.equal(o.maxRecvMsgSize, 1024);
    const f = parseDiscoveryOptions(
      [...base, '--maxRequestsPerSecond', '3', '--keepaliveMaxServerConnectionAge', '30m', '--shutdownDuration', '2s'],
      env,
    );
    assert.equal(f.maxRequestsPerSecond, 3);
    assert.equal(f.maxWarmingStreams, 0, 'set: the rate holds as in istiod');
    assert.equal(f.maxServerConnectionAgeMs, 1_800_000);
    assert.equal(f.shutdownDurationMs, 2000);
    assert.equal(parseDiscoveryOptions(base, { PILOT_MAX_REQUESTS_PER_SECOND: '0' }).maxRequestsPerSecond, defaultPushThrottle());
    assert.equal(
      parseDiscoveryOptions([...base, '--keepaliveMaxServerConnectionAge', '0s'], {}).maxServerConnectionAgeMs,
      Number.POSITIVE_INFINITY,
    );
  });

  it('clear errors name the setting', () => {
    assert.throws(
      () => parseDiscoveryOptions(base, { PILOT_MAX_REQUESTS_PER_SECOND: 'lots' }),
      /PILOT_MAX_REQUESTS_PER_SECOND .*"lots" is not a non-negative number/,
    );
    assert.throws(() => parseDiscoveryOptions(base, { ISTIO_GPRC_MAXSTREAMS: '0' }), /ISTIO_GPRC_MAXSTREAMS .*must be at least 1/);
    assert.throws(() => parseDiscoveryOptions([...base, '--shutdownDuration', '0s'], {}), /--shutdownDuration: .* must be more than 0/);
    assert.throws(
      () => parseDiscoveryOptions([...base, '--keepaliveMaxServerConnectionAge', 'forever'], {}),
      /--keepaliveMaxServerConnectionAge: "forever" is not a duration/,
    );
  });
});

describe('parseDiscoveryOptions: CA and secure gRPC', () => {
  it("defaults: loopback 15012, state under the config dir, istiod's TTLs and cacerts dir", () => {
    const s = parseDiscoveryOptions(base, {}).security;
    assert.equal(s.secureGrpcAddr, '127.0.0.1:15012');
    assert.equal(s.caDir, '/tmp/x/.meshpilot/ca');
    assert.equal(s.caCertsDir, './etc/cacerts');
    assert.equal(s.caKeyType, 'ECDSA');
    assert.equal(s.workloadCertTtlMs, 24 * 3_600_000);
    assert.equal(s.maxWorkloadCertTtlMs, 90 * 24 * 3_600_000);
    assert.equal(s.rootCertTtlMs, 3650 * 24 * 3_600_000);
    assert.equal(s.rootCertCheckIntervalMs, 3_600_000);
    assert.equal(s.rootCertGracePeriodPercentile, 20);
    assert.equal(s.namespace, 'istio-system');
    assert.deepEqual(s.customHosts, []);
    assert.equal(s.jwtRule, undefined);
    assert.deepEqual(s.trustedNodeAccounts, []);
  });

  it('flags win over istiod env names; an empty --secureGRPCAddr disables the secure server', () => {
    const env = {
      ROOT_CA_DIR: '/etc/cacerts',
      DEFAULT_WORKLOAD_CERT_TTL: '1h',
      MAX_WORKLOAD_CERT_TTL: '48h',
      POD_NAMESPACE: 'mesh',
      ISTIOD_CUSTOM_HOST: 'a.example.com, b.example.com',
      JWT_RULE: '{"issuer": "foo", "jwks_uri": "https://foo/keys", "audiences": ["istio-ca"]}',
      CA_TRUSTED_NODE_ACCOUNTS: 'istio-system/ztunnel',
      CITADEL_SELF_SIGNED_ROOT_CERT_CHECK_INTERVAL: '0s',
    };
    const s = parseDiscoveryOptions(
      [...base, '--secureGRPCAddr', '', '--caDir', '/var/ca', '--caKeyType', 'rsa', '--workloadCertTtl', '30m'],
      env,
    ).security;
    assert.equal(s.secureGrpcAddr, '');
    assert.equal(s.caDir, '/var/ca');
    assert.equal(s.caCertsDir, '/etc/cacerts');
    assert.equal(s.caKeyType, 'RSA');
    assert.equal(s.workloadCertTtlMs, 1_800_000);
    assert.equal(s.maxWorkloadCertTtlMs, 48 * 3_600_000);
    assert.equal(s.rootCertCheckIntervalMs, 0);
    assert.equal(s.namespace, 'mesh');
    assert.deepEqual(s.customHosts, ['a.example.com', 'b.example.com']);
    assert.deepEqual(s.jwtRule, { issuer: 'foo', audiences: ['istio-ca'], jwksUri: 'https://foo/keys' });
    assert.deepEqual(s.trustedNodeAccounts, [{ namespace: 'istio-system', serviceAccount: 'ztunnel' }]);
  });

  it('clear errors name the setting', () => {
    assert.throws(() => parseDiscoveryOptions([...base, '--secureGRPCAddr', '15012'], {}), /--secureGRPCAddr: "15012" is not host:port/);
    assert.throws(() => parseDiscoveryOptions([...base, '--caKeyType', 'DSA'], {}), /--caKeyType: "DSA" is not ECDSA or RSA/);
    assert.throws(
      () => parseDiscoveryOptions([...base, '--workloadCertTtl', '100d'], {}),
      /DEFAULT_WORKLOAD_CERT_TTL \(--workloadCertTtl\): "100d" is not a duration/,
    );
    assert.throws(() => parseDiscoveryOptions([...base, '--workloadCertTtl', '3000h'], {}), /must not exceed --maxWorkloadCertTtl/);
    assert.throws(() => parseDiscoveryOptions(base, { JWT_RULE: '{"issuer": "foo"}' }), /JWT_RULE: "audiences" must be a non-empty list/);
    assert.throws(
      () => parseDiscoveryOptions(base, { CA_TRUSTED_NODE_ACCOUNTS: 'ztunnel' }),
      /CA_TRUSTED_NODE_ACCOUNTS: "ztunnel" not <namespace>\/<serviceaccount>/,
    );
  });
});

describe('parseDiscoveryOptions: cluster and mesh config', () => {
  it('file mode without a cluster: no registries; --configDir is required then', () => {
    const o = parseDiscoveryOptions(base, {});
    assert.equal(o.cluster, undefined);
    assert.deepEqual(o.registries, []);
    assert.throws(() => parseDiscoveryOptions([], {}), /--configDir is required .* unless a cluster is configured/);
  });

  it('--kubeconfig or a Pod (KUBERNETES_SERVICE_HOST) configures a cluster, Kubernetes is then the default registry', () => {
    const o = parseDiscoveryOptions(['--kubeconfig', '/k/config'], {});
    assert.deepEqual(o.cluster, { kubeconfig: '/k/config', clusterId: 'Kubernetes', remoteClusterTimeoutMs: 30_000 });
    assert.deepEqual(o.registries, ['Kubernetes']);
    assert.equal(o.configDir, undefined);
    assert.equal(o.security.caDir, '.meshpilot/ca');
    const pod = parseDiscoveryOptions([...base, '--clusterID', 'east'], { KUBERNETES_SERVICE_HOST: '10.96.0.1' });
    assert.deepEqual(pod.cluster, { kubeconfig: undefined, clusterId: 'east', remoteClusterTimeoutMs: 30_000 });
    const env = parseDiscoveryOptions(['--kubeconfig', '/k'], { CLUSTER_ID: 'west', PILOT_REMOTE_CLUSTER_TIMEOUT: '5s' });
    assert.deepEqual(env.cluster, { kubeconfig: '/k', clusterId: 'west', remoteClusterTimeoutMs: 5_000 }, 'CLUSTER_ID when no --clusterID');
    assert.equal(parseDiscoveryOptions(['--kubeconfig', '/k', '--clusterID', 'c1'], { CLUSTER_ID: 'west' }).cluster?.clusterId, 'c1');
    assert.throws(
      () => parseDiscoveryOptions(['--kubeconfig', '/k'], { PILOT_REMOTE_CLUSTER_TIMEOUT: 'soon' }),
      /PILOT_REMOTE_CLUSTER_TIMEOUT: "soon" is not a duration/,
    );
    assert.equal(pod.configDir, '/tmp/x', '--configDir works beside the cluster');
    assert.deepEqual(
      parseDiscoveryOptions(['--kubeconfig', '/k', '--registries', ''], {}).registries,
      [],
      'config only, no service registry',
    );
    assert.equal(parseDiscoveryOptions([...base, '--meshConfig', '/etc/istio/config/mesh'], {}).meshConfigFile, '/etc/istio/config/mesh');
  });

  it('clear errors for registries meshpilot does not have or cannot reach', () => {
    assert.throws(() => parseDiscoveryOptions([...base, '--registries', 'Kubernetes'], {}), /--registries Kubernetes needs a cluster/);
    assert.throws(
      () => parseDiscoveryOptions(['--kubeconfig', '/k', '--registries', 'Consul'], {}),
      /--registries: "Consul" is not a registry meshpilot has/,
    );
    assert.throws(() => parseDiscoveryOptions(['--kubeconfig', ''], {}), /--kubeconfig: empty path/);
  });
});

describe('parseDiscoveryOptions: ISTIO_DUAL_STACK', () => {
  it("off by default (istiod's), on when set, refused when no boolean", () => {
    assert.equal(parseDiscoveryOptions(base, {}).dualStack, false);
    assert.equal(parseDiscoveryOptions(base, { ISTIO_DUAL_STACK: 'true' }).dualStack, true);
    assert.throws(() => parseDiscoveryOptions(base, { ISTIO_DUAL_STACK: 'both' }), /ISTIO_DUAL_STACK/);
  });
});

describe('parseDiscoveryOptions: ambient settings', () => {
  const DRY_RUN = 'AMBIENT_ENABLE_DRY_RUN_AUTHORIZATION_POLICY';
  it('AMBIENT_ENABLE_DRY_RUN_AUTHORIZATION_POLICY: off by default, read with PILOT_ENABLE_AMBIENT', () => {
    const off = parseDiscoveryOptions(base, { PILOT_ENABLE_AMBIENT: 'true' });
    assert.deepEqual([off.ambient, off.ambientDryRunAuthorizationPolicy, off.ignoredAmbientSettings], [true, false, []]);
    const on = parseDiscoveryOptions(base, { PILOT_ENABLE_AMBIENT: 'true', [DRY_RUN]: 'true' });
    assert.equal(on.ambientDryRunAuthorizationPolicy, true);
  });

  it('without ambient it is ignored (istiod: "requires PILOT_ENABLE_AMBIENT=true"), and reported', () => {
    const o = parseDiscoveryOptions(base, { [DRY_RUN]: 'true' });
    assert.deepEqual([o.ambient, o.ambientDryRunAuthorizationPolicy, o.ignoredAmbientSettings], [false, false, [DRY_RUN]]);
  });

  it('a value that is no boolean is refused, naming the setting', () => {
    assert.throws(
      () => parseDiscoveryOptions(base, { PILOT_ENABLE_AMBIENT: 'true', [DRY_RUN]: 'maybe' }),
      new RegExp(`${DRY_RUN}: "maybe"`),
    );
  });
});
