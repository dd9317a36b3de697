import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateObject } from './validate-object.js';

function errs(kind: 'ServiceEntry' | 'WorkloadEntry', spec: unknown): string[] {
  const r = validateObject(
    { apiVersion: 'networking.istio.io/v1', kind, metadata: { name: 'x', namespace: 'ns' }, spec },
    { file: 'se.yaml' },
  );
  return r.ok ? [] : r.errors.map((e) => `${e.path}: ${e.message}`);
}
const se = (spec: unknown) => errs('ServiceEntry', spec);
const http = { number: 80, name: 'http', protocol: 'HTTP' };

test('typical ServiceEntries are valid', () => {
  assert.deepEqual(
    se({
      hosts: ['api.example.com'],
      ports: [{ number: 443, name: 'https', protocol: 'TLS' }],
      resolution: 'DNS',
      location: 'MESH_EXTERNAL',
    }),
    [],
  );
  assert.deepEqual(
    se({
      hosts: ['mymongodb.somedomain'],
      addresses: ['192.192.192.192/24'],
      ports: [{ number: 27018, name: 'mongodb', protocol: 'MONGO' }],
      location: 'MESH_INTERNAL',
      resolution: 'STATIC',
      endpoints: [{ address: '2.2.2.2' }, { address: '3.3.3.3', ports: { mongodb: 27019 }, labels: { app: 'db' } }],
    }),
    [],
  );
  assert.deepEqual(
    se({
      hosts: ['uds.local'],
      ports: [{ number: 80, name: 'http', protocol: 'http' }],
      resolution: 'STATIC',
      endpoints: [{ address: 'unix:///var/run/a.sock' }],
    }),
    [],
  );
  assert.deepEqual(se({ hosts: ['a.example.com'], ports: [http], resolution: 'DNS', endpoints: [{ address: 'backend.example.com' }] }), []);
  assert.deepEqual(se({ hosts: ['w.example.com'], ports: [http], resolution: 'STATIC', workloadSelector: { labels: { app: 'vm' } } }), []);
  // Every Istio protocol name, in any case.
  for (const protocol of ['HTTP', 'https', 'HTTP2', 'grpc', 'GRPC-WEB', 'TCP', 'TLS', 'Mongo', 'REDIS', 'MySQL', 'UDP', '']) {
    assert.deepEqual(se({ hosts: ['a.com'], ports: [{ number: 80, name: 'p', protocol }], resolution: 'NONE' }), [], protocol);
  }
});

test('hosts: at least one, no bare wildcard, valid names', () => {
  assert.deepEqual(se({ ports: [http] }), ['spec.hosts: service entry must have at least one host']);
  assert.deepEqual(se({ hosts: ['*'], ports: [http] }), ['spec.hosts[0]: invalid host *']);
  assert.deepEqual(se({ hosts: ['*.example.com'], ports: [http], resolution: 'DNS' }), [
    'spec.hosts[0]: hosts must be FQDN if no endpoints are provided for resolution mode DNS',
  ]);
});

test('ports: unique numbers and names, valid numbers, names and protocols', () => {
  assert.deepEqual(
    se({
      hosts: ['a.com'],
      ports: [
        http,
        { number: 80, name: 'http', protocol: 'HTTP' },
        { number: 0, name: 'Bad_Name', protocol: 'SCTP' },
        { number: 8080, name: 'alt', targetPort: 70000 },
      ],
    }),
    [
      'spec.ports[1].name: service entry port name "http" already defined',
      'spec.ports[1].number: service entry port 80 already defined',
      'spec.ports[2].name: invalid port name: Bad_Name',
      'spec.ports[2].protocol: unsupported protocol: SCTP',
      'spec.ports[2].number: port number 0 must be in the range 1..65535',
      'spec.ports[3].targetPort: port number 70000 must be in the range 1..65535',
    ],
  );
});

test('resolution rules', () => {
  // STATIC endpoints are used as they are: IPs or unix sockets only.
  assert.deepEqual(se({ hosts: ['a.com'], ports: [http], resolution: 'STATIC', endpoints: [{ address: 'backend.example.com' }] }), [
    'spec.endpoints[0].address: endpoint address "backend.example.com" is not a valid IP address',
  ]);
  assert.deepEqual(se({ hosts: ['a.com'], ports: [http], resolution: 'NONE', endpoints: [{ address: '1.1.1.1' }] }), [
    'spec.endpoints: no endpoints should be provided for resolution type none',
  ]);
  assert.deepEqual(se({ hosts: ['a.com'], ports: [http], resolution: 'DNS', endpoints: [{ address: 'not a host' }] }), [
    'spec.endpoints[0].address: endpoint address "not a host" is not a valid FQDN or an IP address',
  ]);
  assert.deepEqual(
    se({ hosts: ['a.com'], ports: [http], resolution: 'DNS_ROUND_ROBIN', endpoints: [{ address: 'b.com' }, { address: 'c.com' }] }),
    ['spec.endpoints: there must only be 0 or 1 endpoint for resolution mode DNS_ROUND_ROBIN'],
  );
  assert.deepEqual(se({ hosts: ['a.com'], addresses: ['10.0.0.0/8'], ports: [http], resolution: 'DNS' }), [
    'spec.addresses: CIDR addresses are allowed only for NONE/STATIC resolution types',
  ]);
  assert.deepEqual(se({ hosts: ['a.com'], addresses: ['not-an-ip'], ports: [http], resolution: 'NONE' }), [
    'spec.addresses[0]: not-an-ip is not a valid IP',
  ]);
  assert.deepEqual(se({ hosts: ['a.com', 'b.com'], ports: [{ number: 5432, name: 'pg', protocol: 'TCP' }], resolution: 'DNS' }), [
    'spec.ports[0]: multiple hosts provided with non-HTTP, non-TLS ports',
  ]);
});

test('endpoints and workloadSelector are exclusive; endpoint ports must name service ports', () => {
  assert.deepEqual(
    se({
      hosts: ['a.com'],
      ports: [http],
      resolution: 'STATIC',
      endpoints: [{ address: '1.1.1.1' }],
      workloadSelector: { labels: { app: 'a' } },
    }),
    ['spec: only one of WorkloadSelector or Endpoints is allowed in Service Entry'],
  );
  assert.deepEqual(
    se({ hosts: ['a.com'], ports: [http], resolution: 'STATIC', endpoints: [{ address: '1.1.1.1', ports: { grpc: 9000, http: 0 } }] }),
    [
      'spec.endpoints[0].ports[grpc]: endpoint port grpc is not defined by the service entry',
      'spec.endpoints[0].ports[http]: port number 0 must be in the range 1..65535',
    ],
  );
  assert.deepEqual(
    se({
      hosts: ['a.com'],
      ports: [http, { number: 81, name: 'b' }],
      resolution: 'STATIC',
      endpoints: [{ address: 'unix://relative.sock' }],
    }),
    [
      'spec.endpoints[0].address: relative.sock is not an absolute path to a file',
      'spec.endpoints[0].address: exactly 1 service port required for unix endpoints',
    ],
  );
});

test('WorkloadEntry: address required (IP, hostname or unix socket), ports 1..65535, labels valid', () => {
  const we = (spec: unknown) => errs('WorkloadEntry', spec);
  assert.deepEqual(we({ address: '10.0.0.1', ports: { http: 8080 }, labels: { app: 'vm' }, weight: 3 }), []);
  assert.deepEqual(we({ address: 'vm1.example.com' }), []);
  assert.deepEqual(we({ address: 'unix:///run/app.sock' }), []);
  assert.deepEqual(we({ network: 'net1' }), []); // address may be omitted when a network gateway reaches it
  assert.deepEqual(we({}), ['spec.address: address is required']);
  assert.deepEqual(we({ address: 'bad address' }), ['spec.address: endpoint address "bad address" is not a valid FQDN or an IP address']);
  assert.deepEqual(we({ address: '1.1.1.1', ports: { http: 70000, Bad_Name: 80 } }), [
    'spec.ports[http]: port number 70000 must be in the range 1..65535',
    'spec.ports[Bad_Name]: invalid port name: Bad_Name',
  ]);
  assert.deepEqual(we({ address: 'unix:///run/a.sock', ports: { http: 80 } }), [
    'spec.ports: unix endpoint unix:///run/a.sock must not include ports',
  ]);
  assert.deepEqual(we({ address: '1.1.1.1', labels: { '-bad': 'v' } }), ['spec.labels[-bad]: invalid tag key: "-bad"']);
  // weight is a uint32: the schema itself rejects a negative one.
  assert.match(we({ address: '1.1.1.1', weight: -1 })[0] ?? '', /^spec\.weight: /);
});
