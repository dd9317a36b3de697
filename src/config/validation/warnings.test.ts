/**
 * istiod's validation warnings: a second channel beside the errors. An object with warnings only
 * is valid (served as it is); a rejected object keeps its warnings too.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateObject, validateObjectWithWarnings, type RawObject } from './validate-object.js';

const origin = { file: 'cfg/objects.yaml', line: 1 };

const obj = (kind: string, spec: unknown, metadata: Record<string, unknown> = {}): RawObject => ({
  apiVersion: kind === 'RequestAuthentication' || kind === 'AuthorizationPolicy' ? 'security.istio.io/v1' : 'networking.istio.io/v1',
  kind,
  metadata: { name: 'obj', namespace: 'shop', ...metadata },
  spec,
});

/** `path: message` of each warning; fails when the object is rejected. */
function warningsOfValid(doc: RawObject): string[] {
  const { result, warnings } = validateObjectWithWarnings(doc, origin);
  assert.ok(result.ok, result.ok ? '' : JSON.stringify(result.errors));
  return warnings.map((w) => (w.path !== undefined ? `${w.path}: ${w.message}` : w.message));
}

const serviceEntry = (over: Record<string, unknown>): RawObject =>
  obj('ServiceEntry', { hosts: ['db.example.com'], ports: [{ number: 5432, name: 'tcp-pg', protocol: 'TCP' }], ...over });

test('an object with only warnings is accepted by validateObject, its warnings come beside the Config', () => {
  const doc = obj('DestinationRule', { host: 'cart', trafficPolicy: { outlierDetection: { consecutiveErrors: 5 } } });
  assert.ok(validateObject(doc, origin).ok);
  const { warnings } = validateObjectWithWarnings(doc, origin);
  assert.deepEqual(
    warnings.map((w) => [w.kind, w.namespace, w.name, w.path, w.message]),
    [
      [
        'DestinationRule',
        'shop',
        'obj',
        'spec.trafficPolicy.outlierDetection.consecutiveErrors',
        'outlier detection consecutive errors is deprecated, use consecutiveGatewayErrors or consecutive5xxErrors instead',
      ],
    ],
  );
});

test('a rejected object keeps its warnings, and they are not among its errors', () => {
  const doc = obj('DestinationRule', {
    host: 'cart',
    trafficPolicy: { outlierDetection: { consecutiveErrors: 5, maxEjectionPercent: 150 } },
  });
  const { result, warnings } = validateObjectWithWarnings(doc, origin);
  assert.ok(!result.ok);
  assert.deepEqual(
    result.errors.map((e) => e.path),
    ['spec.trafficPolicy.outlierDetection.maxEjectionPercent'],
  );
  assert.deepEqual(
    warnings.map((w) => w.path),
    ['spec.trafficPolicy.outlierDetection.consecutiveErrors'],
  );
});

test('a clean object has no warnings', () => {
  assert.deepEqual(
    warningsOfValid(obj('DestinationRule', { host: 'cart', trafficPolicy: { outlierDetection: { consecutive5xxErrors: 5 } } })),
    [],
  );
});

test('ServiceEntry: addresses are needed for TCP ports only where istiod allocates none', () => {
  const message = 'addresses are required for ports serving TCP (or unset) protocol when IP Autoallocation is not enabled';
  // DNS resolution: istiod allocates an address.
  assert.deepEqual(warningsOfValid(serviceEntry({ resolution: 'DNS' })), []);
  // NONE is never allocated; neither is an entry that opts out with its label.
  assert.deepEqual(warningsOfValid(serviceEntry({ resolution: 'NONE' })), [`spec.ports[0]: ${message}`]);
  const optedOut = {
    ...serviceEntry({ resolution: 'DNS' }),
    metadata: { name: 'db', labels: { 'networking.istio.io/enable-autoallocate-ip': 'false' } },
  };
  assert.deepEqual(warningsOfValid(optedOut), [`spec.ports[0]: ${message}`]);
  // An HTTP port needs no address; an address given needs no allocation.
  assert.deepEqual(warningsOfValid(serviceEntry({ resolution: 'NONE', ports: [{ number: 80, name: 'http', protocol: 'HTTP' }] })), []);
  assert.deepEqual(warningsOfValid(serviceEntry({ resolution: 'NONE', addresses: ['10.1.2.3'] })), []);
});

test('ServiceEntry: empty selector, selector with NONE, several hosts with an address and a TCP port', () => {
  assert.deepEqual(warningsOfValid(serviceEntry({ resolution: 'NONE', addresses: ['10.1.2.3'], workloadSelector: { labels: {} } })), [
    'spec.workloadSelector: service entry: workload selector specified without labels, will be applied to all services in namespace',
    'spec.workloadSelector: workloadSelector should not be set when resolution mode is NONE',
  ]);
  assert.deepEqual(warningsOfValid(serviceEntry({ resolution: 'NONE', addresses: ['10.1.2.3'], hosts: ['*db.example.com'] })), [
    'spec.hosts[0]: partial wildcard "*db.example.com" not allowed',
  ]);
  const tls = [{ number: 443, name: 'tls', protocol: 'TLS' }];
  assert.deepEqual(
    warningsOfValid(serviceEntry({ resolution: 'DNS', hosts: ['a.example.com', 'b.example.com'], addresses: ['10.1.2.3'], ports: tls })),
    ['spec.hosts: service entry can not have more than one host specified simultaneously with address and tcp port'],
  );
});

test('security policies: a selector without labels, a DENY rule on HTTP attributes only, private JWKS keys', () => {
  const policy = (spec: unknown): RawObject => obj('AuthorizationPolicy', spec);
  assert.deepEqual(warningsOfValid(policy({ selector: { matchLabels: {} }, action: 'ALLOW', rules: [{}] })), [
    'spec.selector: workload selector specified without labels',
  ]);
  const denyAllTcp =
    'spec.rules[0]: configured AuthorizationPolicy will deny all traffic to TCP ports under its scope due to the use of only HTTP ' +
    'attributes in a DENY rule; it is recommended to explicitly specify the port';
  assert.deepEqual(warningsOfValid(policy({ action: 'DENY', rules: [{ to: [{ operation: { methods: ['POST'] } }] }] })), [denyAllTcp]);
  assert.deepEqual(warningsOfValid(policy({ action: 'DENY', rules: [{ from: [{ source: { requestPrincipals: ['*'] } }] }] })), [
    denyAllTcp,
  ]);
  // A port, or a source a TCP connection has, makes the rule narrow enough; ALLOW is never warned about.
  assert.deepEqual(
    warningsOfValid(policy({ action: 'DENY', rules: [{ to: [{ operation: { methods: ['POST'], ports: ['8080'] } }] }] })),
    [],
  );
  assert.deepEqual(warningsOfValid(policy({ action: 'DENY', rules: [{ from: [{ source: { namespaces: ['other'] } }] }] })), []);
  assert.deepEqual(warningsOfValid(policy({ action: 'ALLOW', rules: [{ to: [{ operation: { methods: ['GET'] } }] }] })), []);

  // An EC key with its private scalar `d` (RFC 7517 appendix A.2's example key).
  const ecPrivate = {
    kty: 'EC',
    crv: 'P-256',
    x: 'MKBCTNIcKUSDii11ySs3526iDZ8AiTo7Tu6KPAqv7D4',
    y: '4Etl6SRW2YiLUrN5vfvVHuhp7x8PxltmWWlbbM4IFyM',
    d: '870MB6gfuTJ4HtUnUvYMyJpr5eUZNP4Bk43bVdj3eAE',
  };
  const { d: _d, ...ecPublic } = ecPrivate;
  const ra = (keys: unknown[]): RawObject =>
    obj('RequestAuthentication', { jwtRules: [{ issuer: 'https://issuer.example.com', jwks: JSON.stringify({ keys }) }] });
  assert.deepEqual(warningsOfValid(ra([ecPublic, ecPrivate])), [
    'spec.jwtRules[0].jwks: jwks key at index 1 contains private key material; only public keys are used for verification',
  ]);
  assert.deepEqual(warningsOfValid(ra([ecPublic])), []);
});

test('VirtualService: an IP as SNI host, a large direct response body', () => {
  const tlsVs = obj('VirtualService', {
    hosts: ['*.example.com'],
    gateways: ['shop/edge'],
    tls: [{ match: [{ sniHosts: ['10.0.0.1'] }], route: [{ destination: { host: 'backend' } }] }],
  });
  const w = warningsOfValid(tlsVs);
  assert.ok(
    w.includes(
      'spec.tls[0].match[0].sniHosts[0]: using an IP address ("10.0.0.1") goes against SNI spec and most clients do not support this',
    ),
    w.join('\n'),
  );
  const body = (size: number): RawObject =>
    obj('VirtualService', { hosts: ['cart'], http: [{ directResponse: { status: 200, body: { string: 'x'.repeat(size) } } }] });
  assert.deepEqual(warningsOfValid(body(100 * 1024 + 1)), [
    'spec.http[0].directResponse.body: large direct_responses may impact control plane performance',
  ]);
  assert.deepEqual(warningsOfValid(body(100 * 1024)), []);
});

test('DestinationRule: failover without outlier detection', () => {
  const lb = { localityLbSetting: { failover: [{ from: 'us-east', to: 'us-west' }] } };
  assert.deepEqual(warningsOfValid(obj('DestinationRule', { host: 'cart', trafficPolicy: { loadBalancer: lb } })), [
    'spec.trafficPolicy.loadBalancer.localityLbSetting: outlier detection policy must be provided for failover',
  ]);
  const withOutlier = { loadBalancer: lb, outlierDetection: { consecutive5xxErrors: 3 } };
  assert.deepEqual(warningsOfValid(obj('DestinationRule', { host: 'cart', trafficPolicy: withOutlier })), []);
});

test('WorkloadEntry without an address on a network; EnvoyFilter always', () => {
  assert.deepEqual(warningsOfValid(obj('WorkloadEntry', { network: 'remote' })), ['spec.address: address is unset with network "remote"']);
  const ef = obj(
    'EnvoyFilter',
    {
      workloadSelector: { labels: {} },
      configPatches: [
        {
          applyTo: 'LISTENER',
          match: { listener: { filterChain: { filter: { name: 'envoy.filters.network.tcp_proxy' } } } },
          patch: { operation: 'MERGE', value: { per_connection_buffer_limit_bytes: 1024 } },
        },
      ],
    },
    { namespace: 'istio-system' },
  );
  assert.deepEqual(warningsOfValid({ ...ef, apiVersion: 'networking.istio.io/v1alpha3' }), [
    'EnvoyFilter exposes internal implementation details that may change at any time. Prefer other APIs if possible, and exercise extreme caution, especially around upgrades.',
    'spec.workloadSelector: Envoy filter: workload selector specified without labels, will be applied to all services in namespace',
    'spec.configPatches[0].match.listener.filterChain.filter: Envoy filter: filter match has no effect when used with LISTENER',
  ]);
});
