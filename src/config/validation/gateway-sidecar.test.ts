import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateObject } from './validate-object.js';

function errs(kind: 'Gateway' | 'Sidecar', spec: unknown, name = 'x'): string[] {
  const r = validateObject({ apiVersion: 'networking.istio.io/v1', kind, metadata: { name, namespace: 'ns' }, spec }, { file: 'g.yaml' });
  return r.ok ? [] : r.errors.map((e) => `${e.path}: ${e.message}`);
}

test('Gateway: valid servers', () => {
  assert.deepEqual(
    errs('Gateway', {
      selector: { istio: 'ingressgateway' },
      servers: [
        { port: { number: 80, name: 'http', protocol: 'HTTP' }, hosts: ['*'], tls: { httpsRedirect: true } },
        {
          port: { number: 443, name: 'https', protocol: 'HTTPS' },
          hosts: ['ns1/bookinfo.example.com', '*/*.example.com'],
          tls: { mode: 'SIMPLE', credentialName: 'cert' },
        },
        { port: { number: 15443, name: 'tls', protocol: 'TLS' }, hosts: ['*.local'], tls: { mode: 'AUTO_PASSTHROUGH' } },
      ],
    }),
    [],
  );
});

test('Gateway: servers need a port and hosts; obvious TLS rules', () => {
  assert.deepEqual(errs('Gateway', {}), ['spec.servers: gateway must have at least one server']);
  assert.deepEqual(errs('Gateway', { servers: [{ hosts: [] }] }), [
    'spec.servers[0].hosts: server config must contain at least one host',
    'spec.servers[0].port: port is required',
  ]);
  assert.deepEqual(
    errs('Gateway', {
      servers: [
        { port: { number: 443, name: 'https', protocol: 'HTTPS' }, hosts: ['a.com'] },
        { port: { number: 444, name: 'https', protocol: 'HTTPS' }, hosts: ['a.com'], tls: { mode: 'SIMPLE' } },
        { port: { number: 0, name: 'p', protocol: 'FTP' }, hosts: ['short', 'ns/*.a.*.com'] },
      ],
    }),
    [
      'spec.servers[0].tls: server must have TLS settings for HTTPS/TLS protocols',
      'spec.servers[1].port.name: port names in servers must be unique: duplicate name https',
      'spec.servers[1].tls.serverCertificate: SIMPLE TLS requires a server certificate',
      'spec.servers[1].tls.privateKey: SIMPLE TLS requires a private key',
      'spec.servers[2].hosts[0]: short names (non FQDN) are not allowed',
      'spec.servers[2].hosts[1]: domain name "*.a.*.com" invalid (label "*" invalid)',
      'spec.servers[2].port.protocol: invalid protocol "FTP", supported protocols are HTTP, HTTP2, GRPC, GRPC-WEB, MONGO, REDIS, MYSQL, TCP',
      'spec.servers[2].port.number: port number 0 must be in the range 1..65535',
    ],
  );
  assert.deepEqual(errs('Gateway', { servers: [{ port: { number: 80, name: 'h', protocol: 'HTTP' }, hosts: ['*'] }] }, 'gw.with.dots'), [
    'metadata.name: invalid gateway name: "gw.with.dots"',
  ]);
});

test('Sidecar: egress hosts are namespace/host', () => {
  assert.deepEqual(errs('Sidecar', { egress: [{ hosts: ['./*', 'istio-system/*', '*/api.example.com', '~/*'] }] }), []);
  assert.deepEqual(errs('Sidecar', { egress: [{ hosts: ['reviews.default.svc.cluster.local', 'Bad_NS/*', '/x'] }] }), [
    'spec.egress[0].hosts[0]: host must be of form namespace/dnsName',
    'spec.egress[0].hosts[1]: invalid namespace value "Bad_NS" in sidecar',
    'spec.egress[0].hosts[2]: config namespace and dnsName in host entry cannot be empty',
  ]);
  assert.deepEqual(errs('Sidecar', { egress: [{ hosts: [] }] }), [
    'spec.egress[0].hosts: sidecar: egress listener must contain at least one host',
  ]);
});

test('Sidecar: listeners and ports', () => {
  assert.deepEqual(errs('Sidecar', {}), ['spec: sidecar: empty configuration provided']);
  assert.deepEqual(
    errs('Sidecar', {
      ingress: [
        { port: { number: 9080, protocol: 'HTTP', name: 'http' }, defaultEndpoint: '127.0.0.1:8080' },
        { port: { number: 9080, protocol: 'HTTP' }, defaultEndpoint: '10.0.0.1:80' },
        {},
      ],
      egress: [{ hosts: ['./*'] }, { port: { number: 70000, protocol: 'HTTP' }, hosts: ['./*'] }],
    }),
    [
      'spec.ingress[1].port.number: sidecar: ports on IP bound listeners must be unique',
      'spec.ingress[1].defaultEndpoint: sidecar: defaultEndpoint must be of form 127.0.0.1:<port>,0.0.0.0:<port>,[::1]:port,[::]:port,unix://filepath or unset',
      'spec.ingress[2].port: sidecar: port is required for ingress listeners',
      'spec.egress[0]: sidecar: the egress listener with empty port should be the last listener in the list',
      'spec.egress[1].port.number: port number 70000 must be in the range 1..65535',
    ],
  );
  assert.deepEqual(
    errs('Sidecar', {
      outboundTrafficPolicy: { mode: 'REGISTRY_ONLY', egressProxy: { host: 'proxy.example.com', port: { number: 3128 } } },
    }),
    ['spec.outboundTrafficPolicy.egressProxy: sidecar: egress_proxy must be set only with ALLOW_ANY outbound_traffic_policy mode'],
  );
});
