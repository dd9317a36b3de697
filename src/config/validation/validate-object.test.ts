import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Config } from '../config.js';
import { readKey, salvageObject, validateObject, type RawObject } from './validate-object.js';

const origin = { file: 'cfg/vs.yaml', line: 7 };
const vs = (over: Partial<Record<keyof RawObject, unknown>> = {}): RawObject => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'VirtualService',
  metadata: { name: 'reviews', namespace: 'prod', labels: { app: 'reviews' }, annotations: { note: 'x' } },
  spec: { hosts: ['reviews'], http: [{ route: [{ destination: { host: 'reviews' } }] }] },
  ...over,
});
function valid(doc: RawObject): Config {
  const r = validateObject(doc, origin);
  assert.ok(r.ok, r.ok ? '' : JSON.stringify(r.errors));
  return r.value;
}
function errs(doc: RawObject): string[] {
  const r = validateObject(doc, origin);
  return r.ok ? [] : r.errors.map((e) => `${e.path}: ${e.message}`);
}

test('a valid object becomes a Config with metadata, origin and a typed spec', () => {
  const c = valid(vs());
  assert.equal(c.meta.kind, 'VirtualService');
  assert.equal(c.meta.name, 'reviews');
  assert.equal(c.meta.namespace, 'prod');
  assert.deepEqual(c.meta.labels, { app: 'reviews' });
  assert.deepEqual(c.meta.annotations, { note: 'x' });
  assert.deepEqual(c.meta.origin, origin);
  assert.match(c.meta.resourceVersion, /^[0-9a-f]{16}$/);
  assert.ok('hosts' in c.spec);
  assert.deepEqual(c.spec.hosts, ['reviews']);
  assert.ok(Object.isFrozen(c.meta));
});

test('every apiVersion alias of a kind is accepted', () => {
  for (const v of ['v1', 'v1beta1', 'v1alpha3']) valid(vs({ apiVersion: `networking.istio.io/${v}` }));
});

test('an unsupported version, a missing apiVersion or an unserved kind is an error naming it', () => {
  assert.deepEqual(errs(vs({ apiVersion: 'networking.istio.io/v2' })), [
    'apiVersion: apiVersion networking.istio.io/v2 is not supported for VirtualService (supported: networking.istio.io/v1, networking.istio.io/v1beta1, networking.istio.io/v1alpha3)',
  ]);
  assert.deepEqual(errs(vs({ apiVersion: undefined })), ['apiVersion: apiVersion is required']);
  assert.match(errs(vs({ kind: 'ServiceMeshPeer' }))[0] ?? '', /^kind: kind ServiceMeshPeer is not served by meshpilot/);
});

test('errors carry file, line, kind, namespace/name and path', () => {
  const r = validateObject(
    vs({ spec: { hosts: ['reviews'], http: [{ route: [{ destination: { host: 'reviews' }, weight: -5 }] }] } }),
    origin,
  );
  assert.ok(!r.ok);
  assert.deepEqual(r.errors, [
    { origin, kind: 'VirtualService', namespace: 'prod', name: 'reviews', path: 'spec.http[0].route[0].weight', message: 'weight -5 < 0' },
  ]);
});

test('metadata: name is a DNS-1123 subdomain, namespace defaults to default, labels and annotations are strings', () => {
  assert.equal(valid(vs({ metadata: { name: 'a.b-c' } })).meta.namespace, 'default');
  const c = validateObject(vs({ metadata: { name: 'a' } }), origin, { defaultNamespace: 'team' });
  assert.ok(c.ok && c.value.meta.namespace === 'team');
  assert.deepEqual(errs(vs({ metadata: undefined })), ['metadata.name: metadata.name is required']);
  assert.deepEqual(errs(vs({ metadata: 'x' })), ['metadata: metadata must be an object']);
  assert.deepEqual(errs(vs({ metadata: { name: 'Reviews' } })), [
    `metadata.name: invalid name "Reviews": must be a lowercase RFC 1123 subdomain (a-z, 0-9, '-', '.'; at most 253 characters)`,
  ]);
  assert.deepEqual(errs(vs({ metadata: { name: 'a', namespace: 'a.b' } })), [
    `metadata.namespace: invalid namespace "a.b": must be a lowercase RFC 1123 label (a-z, 0-9, '-'; at most 63 characters)`,
  ]);
  assert.deepEqual(errs(vs({ metadata: { name: 'a', labels: { version: 1, ok: 'yes' }, annotations: { on: true } } })), [
    'metadata.labels[version]: value must be a string, got number (quote it in YAML)',
    'metadata.annotations[on]: value must be a string, got boolean (quote it in YAML)',
  ]);
  assert.deepEqual(errs(vs({ metadata: { name: 'a', labels: { 'bad key!': 'v' } } })), [
    'metadata.labels[bad key!]: invalid tag key: "bad key!"',
  ]);
});

test('spec errors name the field precisely; unknown fields suggest the right name', () => {
  assert.deepEqual(errs(vs({ spec: 'x' })), ['spec: spec must be an object']);
  assert.deepEqual(errs(vs({ spec: { host: ['a'] } })), [
    'spec.host: unknown field "host"',
    'spec: http, tcp or tls must be provided in virtual service',
  ]);
  assert.deepEqual(errs(vs({ spec: { hosts: ['a'], http: [{ route: [{ destination: { host: 'a', port_number: 1 } }] }] } })), [
    'spec.http[0].route[0].destination.port_number: unknown field "port_number"',
  ]);
  assert.deepEqual(errs(vs({ spec: { hosts: ['a'], http: [{ route: [{ destination: { host: 'a' } }], retries: { attemps: 2 } }] } })), [
    'spec.http[0].retries.attemps: unknown field "attemps"',
  ]);
  assert.deepEqual(errs(vs({ spec: { hosts: 'a', http: [{ route: [] }] } })), ['spec.hosts: expected a list, got string "a"']);
  assert.deepEqual(errs(vs({ spec: { hosts: ['a', 7], http: [{ route: [{ destination: { host: 'a' } }] }] } })), [
    'spec.hosts[1]: expected string, got 7',
  ]);
  assert.deepEqual(errs(vs({ spec: { Hosts: ['a'], http: [{ route: [{ destination: { host: 'a' } }] }] } })), [
    'spec.Hosts: unknown field "Hosts" (did you mean "hosts"?)',
  ]);
  // proto field names are accepted as proto3 JSON allows.
  valid(vs({ spec: { hosts: ['a'], export_to: ['.'], http: [{ route: [{ destination: { host: 'a' } }] }] } }));
});

test('Go-style durations (as istiod accepts them) decode like their proto3 JSON forms', () => {
  const dr = (interval: string): RawObject => ({
    apiVersion: 'networking.istio.io/v1',
    kind: 'DestinationRule',
    metadata: { name: 'd' },
    spec: { host: 'a', trafficPolicy: { outlierDetection: { interval, baseEjectionTime: '3m' } } },
  });
  const a = valid(dr('30ms'));
  const b = valid(dr('0.030s'));
  assert.equal(a.meta.resourceVersion, b.meta.resourceVersion);
  assert.ok('trafficPolicy' in a.spec);
  assert.equal(a.spec.trafficPolicy?.outlierDetection?.baseEjectionTime?.seconds, 180n);
});

test('resourceVersion is a content hash: equal for equal content, whatever the spelling', () => {
  const a = valid(vs());
  const spelledDifferently = valid({
    kind: 'VirtualService',
    apiVersion: 'networking.istio.io/v1alpha3',
    spec: { http: [{ route: [{ weight: '0', destination: { host: 'reviews' } }] }], hosts: ['reviews'] },
    metadata: { annotations: { note: 'x' }, labels: { app: 'reviews' }, namespace: 'prod', name: 'reviews' },
  });
  assert.equal(a.meta.resourceVersion, spelledDifferently.meta.resourceVersion);
  assert.notEqual(
    valid(vs({ metadata: { name: 'reviews', namespace: 'prod', labels: { app: 'other' } } })).meta.resourceVersion,
    a.meta.resourceVersion,
  );
  assert.notEqual(
    valid(vs({ spec: { hosts: ['reviews'], http: [{ route: [{ destination: { host: 'ratings' } }] }] } })).meta.resourceVersion,
    a.meta.resourceVersion,
  );
});

test('readKey reads kind/namespace/name of objects valid or not', () => {
  assert.deepEqual(readKey(vs({ spec: 'garbage' })), { kind: 'VirtualService', namespace: 'prod', name: 'reviews' });
  assert.deepEqual(readKey(vs({ metadata: { name: 'x' } }), { defaultNamespace: 'd' }), {
    kind: 'VirtualService',
    namespace: 'd',
    name: 'x',
  });
  assert.equal(readKey(vs({ metadata: { namespace: 'x' } })), undefined);
  assert.equal(readKey(vs({ kind: 'Service' })), undefined);
});

test('salvageObject: a rejected object as far as it reads (semantic and metadata problems ignored, unknown fields dropped)', () => {
  const doc = {
    apiVersion: 'networking.istio.io/v1',
    kind: 'Gateway',
    metadata: { name: 'Edge', namespace: 'edge' },
    spec: { selector: { app: 'edge' }, servers: [{ hosts: ['a.example.com'], bogus: 1 }] },
  };
  assert.equal(validateObject(doc, { file: 'gw.yaml' }).ok, false);
  const c = salvageObject(doc, { file: 'gw.yaml' });
  assert.equal(c?.meta.kind, 'Gateway');
  assert.equal(c?.meta.name, 'Edge');
  assert.deepEqual(
    (c as Config<'Gateway'> | undefined)?.spec.servers.map((s) => s.hosts),
    [['a.example.com']],
  );
  // Nothing to salvage without a known kind, a name or a decodable spec.
  assert.equal(salvageObject({ ...doc, kind: 'Unknown' }, { file: 'gw.yaml' }), undefined);
  assert.equal(salvageObject({ ...doc, metadata: {} }, { file: 'gw.yaml' }), undefined);
  assert.equal(salvageObject({ ...doc, spec: { servers: 'none' } }, { file: 'gw.yaml' }), undefined);
});
