import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateObject } from './validate-object.js';

function errs(spec: unknown): string[] {
  const r = validateObject(
    { apiVersion: 'networking.istio.io/v1', kind: 'DestinationRule', metadata: { name: 'dr', namespace: 'ns' }, spec },
    { file: 'dr.yaml' },
  );
  return r.ok ? [] : r.errors.map((e) => `${e.path}: ${e.message}`);
}

test('a typical DestinationRule is valid', () => {
  assert.deepEqual(
    errs({
      host: 'reviews.prod.svc.cluster.local',
      trafficPolicy: {
        loadBalancer: {
          simple: 'LEAST_REQUEST',
          localityLbSetting: { distribute: [{ from: 'us-west/*', to: { 'us-west/*': 80, 'us-east/*': 20 } }] },
        },
        connectionPool: { tcp: { maxConnections: 100, connectTimeout: '30ms' }, http: { http2MaxRequests: 1000, idleTimeout: '1h' } },
        outlierDetection: { consecutive5xxErrors: 7, interval: '5m', baseEjectionTime: '15m', maxEjectionPercent: 50 },
        tls: { mode: 'ISTIO_MUTUAL' },
        portLevelSettings: [{ port: { number: 80 }, loadBalancer: { consistentHash: { httpCookie: { name: 'user', ttl: '0s' } } } }],
      },
      subsets: [
        { name: 'v1', labels: { version: 'v1' } },
        {
          name: 'v2',
          labels: { version: 'v2' },
          trafficPolicy: { loadBalancer: { consistentHash: { maglev: { tableSize: 65537 }, useSourceIp: true } } },
        },
      ],
    }),
    [],
  );
});

test('host must be a valid name', () => {
  assert.deepEqual(errs({}), ['spec.host: empty domain name not allowed']);
  assert.deepEqual(errs({ host: 'a..b' }), ['spec.host: domain name "a..b" invalid (label "" invalid)']);
});

test('subsets have unique, valid names and valid labels', () => {
  assert.deepEqual(
    errs({
      host: 'r',
      subsets: [{ name: 'v1' }, { name: 'v1' }, { name: '' }, { name: 'V_2' }, { name: 'v3', labels: { 'a/b/c': 'x', ok: 'bad value' } }],
    }),
    [
      'spec.subsets[1].name: duplicate subset names: v1',
      'spec.subsets[2].name: subset name cannot be empty',
      'spec.subsets[3].name: subset name is invalid: V_2',
      'spec.subsets[4].labels[a/b/c]: invalid tag key: "a/b/c"',
      'spec.subsets[4].labels[ok]: invalid tag value: "bad value"',
    ],
  );
});

test('load balancer: simple and consistentHash are exclusive; consistentHash details', () => {
  assert.deepEqual(errs({ host: 'r', trafficPolicy: { loadBalancer: { simple: 'RANDOM', consistentHash: { useSourceIp: true } } } }), [
    'spec.trafficPolicy.loadBalancer: only one of "simple" and "consistentHash" may be set',
  ]);
  assert.deepEqual(errs({ host: 'r', trafficPolicy: { loadBalancer: { consistentHash: { httpCookie: { ttl: '1s' } } } } }), [
    'spec.trafficPolicy.loadBalancer.consistentHash.httpCookie.name: name required for HttpCookie',
  ]);
  assert.deepEqual(
    errs({ host: 'r', trafficPolicy: { loadBalancer: { consistentHash: { useSourceIp: true, maglev: { tableSize: 1000 } } } } }),
    ['spec.trafficPolicy.loadBalancer.consistentHash.maglev.tableSize: tableSize must be a prime number for maglev'],
  );
  assert.deepEqual(errs({ host: 'r', trafficPolicy: { loadBalancer: { simple: 'FASTEST' } } }), [
    'spec.trafficPolicy.loadBalancer.simple: unknown value "FASTEST"; expected one of UNSPECIFIED, LEAST_CONN, RANDOM, PASSTHROUGH, ROUND_ROBIN, LEAST_REQUEST',
  ]);
  assert.deepEqual(
    errs({ host: 'r', trafficPolicy: { loadBalancer: { localityLbSetting: { distribute: [{ from: 'a/*', to: { 'b/*': 50 } }] } } } }),
    ['spec.trafficPolicy.loadBalancer.localityLbSetting.distribute[0].to: total locality weight 50 != 100'],
  );
});

test('connection pool numbers are non-negative and durations valid', () => {
  assert.deepEqual(errs({ host: 'r', trafficPolicy: { connectionPool: {} } }), [
    'spec.trafficPolicy.connectionPool: connection pool must have at least one field',
  ]);
  assert.deepEqual(
    errs({
      host: 'r',
      trafficPolicy: {
        connectionPool: {
          tcp: { maxConnections: -1, connectTimeout: '0s' },
          http: { maxRetries: -2, h2UpgradePolicy: 'UPGRADE', useClientProtocol: true },
        },
      },
    }),
    [
      'spec.trafficPolicy.connectionPool.http.maxRetries: maxRetries must be non-negative',
      'spec.trafficPolicy.connectionPool.http.useClientProtocol: use client protocol must not be true when H2UpgradePolicy is UPGRADE',
      'spec.trafficPolicy.connectionPool.tcp.maxConnections: max connections must be non-negative',
      'spec.trafficPolicy.connectionPool.tcp.connectTimeout: duration must be greater than 1ms',
    ],
  );
});

test('outlier detection percentages are 0..100', () => {
  assert.deepEqual(
    errs({ host: 'r', trafficPolicy: { outlierDetection: { maxEjectionPercent: 101, minHealthPercent: -1, interval: '0s' } } }),
    [
      'spec.trafficPolicy.outlierDetection.interval: duration must be greater than 1ms',
      'spec.trafficPolicy.outlierDetection.maxEjectionPercent: percentage 101 is not in range 0..100',
      'spec.trafficPolicy.outlierDetection.minHealthPercent: percentage -1 is not in range 0..100',
    ],
  );
  assert.deepEqual(errs({ host: 'r', trafficPolicy: { outlierDetection: { consecutiveLocalOriginFailures: 3 } } }), [
    'spec.trafficPolicy.outlierDetection.consecutiveLocalOriginFailures: outlier detection consecutive local origin failures is specified, but split external local origin errors is set to false',
  ]);
});

test('tls: MUTUAL needs a client certificate and key unless credentialName is set', () => {
  assert.deepEqual(errs({ host: 'r', trafficPolicy: { tls: { mode: 'MUTUAL' } } }), [
    'spec.trafficPolicy.tls.clientCertificate: client certificate required for mutual tls',
    'spec.trafficPolicy.tls.privateKey: private key required for mutual tls',
  ]);
  assert.deepEqual(errs({ host: 'r', trafficPolicy: { tls: { mode: 'MUTUAL', credentialName: 'cred' } } }), []);
  assert.deepEqual(errs({ host: 'r', trafficPolicy: { tls: { mode: 'MUTUAL', clientCertificate: '/c', privateKey: '/k' } } }), []);
  assert.deepEqual(errs({ host: 'r', trafficPolicy: { tls: { mode: 'SIMPLE', credentialName: 'cred', caCertificates: '/ca' } } }), [
    'spec.trafficPolicy.tls: cannot specify client certificates or CA certificate or CA CRL If credentialName is set',
  ]);
  assert.deepEqual(errs({ host: 'r', trafficPolicy: { tls: { mode: 'SIMPLE', insecureSkipVerify: true, caCertificates: '/ca' } } }), [
    'spec.trafficPolicy.tls: cannot specify CaCertificates or CredentialName or SubjectAltNames when InsecureSkipVerify is set true',
  ]);
});

test('port level settings need a port in 1..65535 and at least one setting', () => {
  assert.deepEqual(
    errs({
      host: 'r',
      trafficPolicy: {
        portLevelSettings: [{ tls: { mode: 'SIMPLE' } }, { port: { number: 70000 }, tls: { mode: 'SIMPLE' } }, { port: { number: 80 } }],
      },
    }),
    [
      'spec.trafficPolicy.portLevelSettings[0].port: portTrafficPolicy must have valid port',
      'spec.trafficPolicy.portLevelSettings[1].port.number: port number 70000 must be in the range 1..65535',
      'spec.trafficPolicy.portLevelSettings[2]: port traffic policy must have at least one field',
    ],
  );
});

test('an empty traffic policy and a bad workload selector are rejected', () => {
  assert.deepEqual(errs({ host: 'r', trafficPolicy: {} }), ['spec.trafficPolicy: traffic policy must have at least one field']);
  assert.deepEqual(errs({ host: 'r', workloadSelector: { matchLabels: { app: '*' } }, exportTo: ['other'] }), [
    'spec.workloadSelector.matchLabels[app]: wildcard is not supported in selector: "app=*"',
    'spec.exportTo: destination rule with workload selector cannot have exportTo beyond current namespace',
  ]);
});
