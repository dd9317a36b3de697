import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parsePodAnnotations } from './envoy-options.js';
import { buildNode } from './node-identity.js';
import { parseAgentOptions, parseLabels } from './options.js';

describe('parseAgentOptions', () => {
  it("defaults to pilot-agent's paths and settings (Envoy mode, TLS to istiod:15012)", () => {
    const o = parseAgentOptions([], { POD_NAME: 'p', POD_NAMESPACE: 'ns', INSTANCE_IP: '10.1.2.3' });
    assert.equal(o.mode, 'envoy');
    assert.equal(o.xdsAddr, 'istiod.istio-system.svc:15012');
    assert.equal(o.caAddr, o.xdsAddr);
    assert.equal(o.xdsTransport, 'tls');
    assert.equal(o.caRootCertFile, './var/run/secrets/istio/root-cert.pem');
    assert.equal(o.xdsRootCertFile, o.caRootCertFile);
    assert.equal(o.tokenFile, './var/run/secrets/tokens/istio-token');
    assert.equal(o.sdsSocket, './var/run/secrets/workload-spiffe-uds/socket');
    assert.equal(o.xdsSocket, './etc/istio/proxy/XDS');
    assert.equal(o.outputDir, undefined, 'Envoy mode writes no cert files unless OUTPUT_CERTS is set');
    assert.deepEqual([o.podName, o.namespace, o.podIp, o.serviceAccount], ['p', 'ns', '10.1.2.3', 'default']);
    assert.deepEqual([o.secretTtlMs, o.gracePeriodRatio, o.gracePeriodJitter], [86_400_000, 0.5, 0.01]);
    assert.equal(o.keyType, 'ECDSA');
    assert.equal(o.envoyXdsApi, 'DELTA_GRPC');
    assert.equal(o.certRefreshIntervalMs, 900_000);
  });

  it('selects proxyless mode from ISTIO_META_GENERATOR=grpc and writes certs to /var/lib/istio/data by default', () => {
    const o = parseAgentOptions([], { ISTIO_META_GENERATOR: 'grpc', ISTIO_META_CLUSTER_ID: 'c2', ISTIO_META_WORKLOAD_NAME: 'w' });
    assert.equal(o.mode, 'grpc');
    assert.equal(o.outputDir, './var/lib/istio/data');
    assert.equal(o.grpcBootstrapFile, './etc/istio/proxy/grpc-bootstrap.json');
    assert.equal(o.clusterId, 'c2');
    assert.deepEqual(o.extraMetadata, { WORKLOAD_NAME: 'w' });
  });

  it("reads pilot-agent's environment, and flags win over it", () => {
    const env = {
      CA_ADDR: 'ca:15012',
      PROV_CERT: '/prov',
      OUTPUT_CERTS: '/out',
      SECRET_TTL: '1h',
      SECRET_GRACE_PERIOD_RATIO: '0.25',
      GRPC_XDS_BOOTSTRAP: '/b.json',
      ISTIOD_SAN: 'istiod.other.svc',
      TRUST_DOMAIN: 'example.org',
      SERVICE_ACCOUNT: 'sa1',
      ECC_SIGNATURE_ALGORITHM: 'RSA',
      ISTIO_METAJSON_LABELS: '{"app":"a","n":1}',
      XDS_ROOT_CA: '/xds-root.pem',
    };
    const o = parseAgentOptions([], env);
    assert.deepEqual(
      [
        o.caAddr,
        o.provCertDir,
        o.outputDir,
        o.secretTtlMs,
        o.gracePeriodRatio,
        o.grpcBootstrapFile,
        o.istiodSAN,
        o.trustDomain,
        o.serviceAccount,
        o.keyType,
        o.xdsRootCertFile,
      ],
      ['ca:15012', '/prov', '/out', 3_600_000, 0.25, '/b.json', 'istiod.other.svc', 'example.org', 'sa1', 'RSA', '/xds-root.pem'],
    );
    assert.deepEqual(o.labels, { app: 'a', n: '1' });
    const f = parseAgentOptions(
      ['--caAddr', 'x:1', '--secretTTL', '10s', '--labels', 'app=b', '--keyType', 'ECDSA', '--secretGracePeriodRatio', '0.3'],
      env,
    );
    assert.deepEqual([f.caAddr, f.secretTtlMs, f.labels, f.keyType, f.gracePeriodRatio], ['x:1', 10_000, { app: 'b' }, 'ECDSA', 0.3]);
  });

  it('takes the discovery address from PROXY_CONFIG and picks plaintext for 15010', () => {
    const o = parseAgentOptions([], { PROXY_CONFIG: '{"discoveryAddress":"istiod.istio-system.svc:15010"}' });
    assert.equal(o.xdsAddr, 'istiod.istio-system.svc:15010');
    assert.equal(o.xdsTransport, 'plaintext');
    assert.equal(o.caAddr, 'istiod.istio-system.svc:15012', 'the CA is not on the plaintext port');
    assert.equal(parseAgentOptions(['--xdsAddr', '127.0.0.1:4000', '--xdsTransport', 'plaintext'], {}).xdsTransport, 'plaintext');
    assert.equal(parseAgentOptions(['--xdsAddr', '127.0.0.1:15010', '--xdsTransport', 'tls'], {}).xdsTransport, 'tls');
  });

  it('rejects bad values with the flag or variable named', () => {
    assert.throws(() => parseAgentOptions(['--mode', 'sidecar'], {}), /--mode: "sidecar" is not one of grpc, envoy/);
    assert.throws(() => parseAgentOptions(['--secretTTL', 'soon'], {}), /--secretTTL/);
    assert.throws(() => parseAgentOptions(['--secretTTL', '0s'], {}), /must be more than 0/);
    assert.throws(() => parseAgentOptions([], { SECRET_GRACE_PERIOD_RATIO: '1.5' }), /SECRET_GRACE_PERIOD_RATIO.*\[0.01, 0.99\]/);
    assert.throws(() => parseAgentOptions(['--keyType', 'DSA'], {}), /--keyType/);
    assert.throws(() => parseAgentOptions([], { ISTIO_METAJSON_LABELS: '[1]' }), /ISTIO_METAJSON_LABELS: not a JSON object/);
    assert.throws(() => parseAgentOptions(['--retryInitialInterval', '10s', '--retryMaxInterval', '1s'], {}), /retryMaxInterval/);
    assert.throws(() => parseAgentOptions(['--bogus'], {}), /bogus/);
  });
});

describe('parseAgentOptions: running Envoy', () => {
  it("pilot-agent's defaults: /usr/local/bin/envoy, 15000/15020/15021/15090, concurrency 2, drain 45s, termination drain 5s", () => {
    const e = parseAgentOptions([], {}).envoy;
    assert.deepEqual(
      [
        e.binaryPath,
        e.adminPort,
        e.statusPort,
        e.envoyStatusPort,
        e.prometheusPort,
        e.concurrency,
        e.drainDurationMs,
        e.terminationDrainDurationMs,
      ],
      ['/usr/local/bin/envoy', 15000, 15020, 15021, 15090, 2, 45_000, 5_000],
    );
    assert.deepEqual(
      [e.logLevel, e.componentLogLevel, e.maxRestarts, e.restartInitialIntervalMs, e.appProbers],
      ['warning', 'misc:error', 10, 200, ''],
    );
    assert.equal(e.run, true);
    const bootstrapOnly = parseAgentOptions(['--runEnvoy', 'false', '--statusPort', '0'], {}).envoy;
    assert.deepEqual(
      [bootstrapOnly.run, bootstrapOnly.statusPort],
      [false, 0],
      'an Envoy run elsewhere; no status server, as pilot-agent with statusPort 0',
    );
  });

  it('reads PROXY_CONFIG, then pilot-agent env over it, then flags over both', () => {
    const PROXY_CONFIG = JSON.stringify({
      binaryPath: '/opt/envoy',
      concurrency: 4,
      statusPort: 16020,
      proxyAdminPort: 16000,
      drainDuration: '30s',
      terminationDrainDuration: '20s',
    });
    const fromPc = parseAgentOptions([], { PROXY_CONFIG }).envoy;
    assert.deepEqual(
      [
        fromPc.binaryPath,
        fromPc.concurrency,
        fromPc.statusPort,
        fromPc.adminPort,
        fromPc.drainDurationMs,
        fromPc.terminationDrainDurationMs,
      ],
      ['/opt/envoy', 4, 16020, 16000, 30_000, 20_000],
    );
    const env = {
      PROXY_CONFIG,
      TERMINATION_DRAIN_DURATION_SECONDS: '7',
      ENVOY_STATUS_PORT: '16021',
      ENVOY_PROMETHEUS_PORT: '16090',
      ISTIO_KUBE_APP_PROBERS: '{}',
    };
    const fromEnv = parseAgentOptions([], env).envoy;
    assert.deepEqual(
      [fromEnv.terminationDrainDurationMs, fromEnv.envoyStatusPort, fromEnv.prometheusPort, fromEnv.appProbers],
      [7_000, 16021, 16090, '{}'],
    );
    const flags = [
      '--envoyBinary',
      '/x/envoy',
      '--terminationDrainDuration',
      '1s',
      '--statusPort',
      '17020',
      '--concurrency',
      '0',
      '--envoyStatusPort',
      '17021',
    ];
    const fromFlags = parseAgentOptions(flags, env).envoy;
    assert.deepEqual(
      [fromFlags.binaryPath, fromFlags.terminationDrainDurationMs, fromFlags.statusPort, fromFlags.concurrency, fromFlags.envoyStatusPort],
      ['/x/envoy', 1_000, 17020, 0, 17021],
    );
  });

  it("the pod's annotations file overrides ProxyConfig's status port and discovery address, as pilot-agent", () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'agent-annotations-'));
    try {
      const file = path.join(dir, 'annotations');
      writeFileSync(
        file,
        'kubectl.kubernetes.io/default-container="app"\nstatus.sidecar.istio.io/port="16020"\nsidecar.istio.io/discoveryAddress="meshpilot.mesh.svc:15012"\nodd="a \\"quoted\\" value"\n',
      );
      assert.deepEqual(parsePodAnnotations(readFileSync(file, 'utf8')).odd, 'a "quoted" value');
      const o = parseAgentOptions(['--podAnnotations', file], {
        PROXY_CONFIG: JSON.stringify({ statusPort: 15555, discoveryAddress: 'istiod.x.svc:15012' }),
      });
      assert.deepEqual([o.envoy.statusPort, o.xdsAddr], [16020, 'meshpilot.mesh.svc:15012']);
      assert.equal(parseAgentOptions(['--podAnnotations', path.join(dir, 'absent')], {}).envoy.statusPort, 15020, 'no file off Kubernetes');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the node tells istiod the health and Prometheus ports Envoy really listens on', () => {
    const o = parseAgentOptions(['--envoyStatusPort', '17021', '--envoyPrometheusPort', '17090', '--podName', 'p'], {});
    const metadata = buildNode(o).metadata;
    assert.deepEqual([metadata.ENVOY_STATUS_PORT, metadata.ENVOY_PROMETHEUS_PORT], [17021, 17090]);
  });

  it('rejects bad values naming the flag or variable', () => {
    assert.throws(() => parseAgentOptions(['--statusPort', '70000'], {}), /--statusPort \(statusPort\): "70000" is not a port \(0-65535\)/);
    assert.throws(() => parseAgentOptions(['--adminPort', '0'], {}), /--adminPort \(proxyAdminPort\): "0" is not a port \(1-65535\)/);
    assert.throws(() => parseAgentOptions(['--runEnvoy', 'maybe'], {}), /--runEnvoy: "maybe" is not a boolean/);
    assert.throws(
      () => parseAgentOptions([], { TERMINATION_DRAIN_DURATION_SECONDS: '5s' }),
      /TERMINATION_DRAIN_DURATION_SECONDS: "5s" is not a whole number of seconds/,
    );
    assert.throws(() => parseAgentOptions(['--concurrency', 'many'], {}), /--concurrency \(concurrency\): "many" is not a whole number/);
    assert.throws(() => parseAgentOptions(['--envoyRestartInterval', '0s'], {}), /--envoyRestartInterval: "0s" must be more than 0/);
  });
});

describe('parseLabels', () => {
  it('parses k=v lists, keeping "=" inside values', () => {
    assert.deepEqual(parseLabels('app=a, version=v1,expr=a=b', 'x'), { app: 'a', version: 'v1', expr: 'a=b' });
    assert.deepEqual(parseLabels('', 'x'), {});
    assert.throws(() => parseLabels('novalue', '--labels'), /--labels: "novalue" is not key=value/);
  });
});
