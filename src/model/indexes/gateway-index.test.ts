import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { create } from '@bufbuild/protobuf';
import { HTTPMatchRequestSchema } from '../../gen/networking/v1alpha3/virtual_service_pb.js';
import { matchApplies } from '../../networking/route/route-match.js';
import { GatewayIndex, resolveGatewayName } from './gateway-index.js';
import { snapshotOf } from '../../../test/support/config-fixture.js';

function index(objects: Record<string, unknown>[]): GatewayIndex {
  return GatewayIndex.build(snapshotOf(objects));
}

const gw = (name: string, namespace: string, selector?: Record<string, string>, creationTimestamp?: string) => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'Gateway',
  metadata: { name, namespace, ...(creationTimestamp ? { creationTimestamp } : {}) },
  spec: { ...(selector ? { selector } : {}), servers: [{ port: { number: 80, name: 'http', protocol: 'HTTP' }, hosts: ['*'] }] },
});
const vs = (name: string, namespace: string, gateways: string[], extra: Record<string, unknown> = {}, creationTimestamp?: string) => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'VirtualService',
  metadata: { name, namespace, ...(creationTimestamp ? { creationTimestamp } : {}) },
  spec: {
    hosts: [`${name}.example.com`],
    gateways,
    http: [{ match: [{ gateways: gateways.filter((g) => g !== 'mesh') }], route: [{ destination: { host: 'x' } }] }],
    ...extra,
  },
});

describe('resolveGatewayName', () => {
  it('resolves names as istiod does', () => {
    const cases: [string, string, string][] = [
      ['./gateway', 'default', 'default/gateway'],
      ['gateway', 'default', 'default/gateway'],
      ['default/gateway', 'foo', 'default/gateway'],
      ['gateway.default', 'foo', 'default/gateway'],
      ['private.ingress.svc.cluster.local', 'foo', 'ingress/private'],
      ['mesh', 'foo', 'mesh'],
    ];
    for (const [name, ns, want] of cases) assert.equal(resolveGatewayName(name, ns), want, `${name} in ${ns}`);
  });

  it('matchApplies resolves match gateways against the VirtualService namespace; `mesh` matches as before', () => {
    const m = create(HTTPMatchRequestSchema, { gateways: ['ingress', 'mesh'] });
    const base = { port: 80, namespace: 'istio-system', labels: {} };
    assert.equal(matchApplies(m, { ...base, gateway: 'istio-system/ingress', configNamespace: 'istio-system' }), true);
    assert.equal(
      matchApplies(m, { ...base, gateway: 'istio-system/ingress', configNamespace: 'apps' }),
      false,
      'a short name means the VirtualService namespace',
    );
    assert.equal(matchApplies(m, { ...base, gateway: 'mesh' }), true);
    assert.equal(matchApplies(create(HTTPMatchRequestSchema, { gateways: ['istio-system/ingress'] }), { ...base, gateway: 'mesh' }), false);
  });
});

describe('GatewayIndex', () => {
  it('forProxy: Gateways of every namespace whose selector is a subset of the labels; no selector selects all', () => {
    const idx = index([
      gw('ingress', 'istio-system', { istio: 'ingressgateway' }),
      gw('team', 'team-a', { istio: 'ingressgateway', team: 'a' }),
      gw('any', 'apps'),
    ]);
    assert.deepEqual(
      idx.forProxy({ istio: 'ingressgateway' }).map((g) => `${g.meta.namespace}/${g.meta.name}`),
      ['apps/any', 'istio-system/ingress'],
    );
    assert.deepEqual(
      idx.forProxy({ istio: 'ingressgateway', team: 'a' }).map((g) => g.meta.name),
      ['any', 'ingress', 'team'],
    );
  });

  it('virtualServicesFor: gateway names resolved against the VirtualService namespace, exportTo honoured, name order among equal creation times', () => {
    const idx = index([
      vs('b-short', 'istio-system', ['ingress']),
      vs('a-full', 'apps', ['istio-system/ingress', 'mesh']),
      vs('legacy', 'apps', ['ingress.istio-system.svc.cluster.local']),
      vs('wrong-ns', 'apps', ['ingress']),
      vs('private', 'apps', ['istio-system/ingress'], { exportTo: ['.'] }),
      vs('mesh-only', 'apps', []),
    ]);
    const bound = idx.virtualServicesFor('istio-system/ingress', 'istio-system');
    assert.deepEqual(
      bound.map((v) => `${v.meta.namespace}/${v.meta.name}`),
      ['apps/a-full', 'istio-system/b-short', 'apps/legacy'],
    );
    assert.deepEqual(
      bound.find((v) => v.meta.name === 'b-short')!.spec.http[0]!.match[0]!.gateways,
      ['istio-system/ingress'],
      'match gateways resolved too',
    );
    assert.deepEqual(
      idx.virtualServicesFor('istio-system/ingress', 'apps').map((v) => v.meta.name),
      ['a-full', 'b-short', 'legacy', 'private'],
    );
    assert.deepEqual(
      idx.virtualServicesFor('apps/ingress', 'apps').map((v) => v.meta.name),
      ['wrong-ns'],
    );
  });

  it('Gateways and their VirtualServices oldest first: creation time, then name, then namespace (istiod)', () => {
    const idx = index([
      gw('a-new', 'istio-system', undefined, '2024-03-01T00:00:00Z'),
      gw('z-old', 'istio-system', undefined, '2024-01-01T00:00:00Z'),
      gw('m-file', 'istio-system'),
      vs('a-new', 'apps', ['istio-system/ingress'], {}, '2024-03-01T00:00:00Z'),
      vs('z-old', 'apps', ['istio-system/ingress'], {}, '2024-01-01T00:00:00Z'),
      vs('m-file', 'zz', ['istio-system/ingress']),
      vs('m-file', 'aa', ['istio-system/ingress']),
    ]);
    assert.deepEqual(
      idx.forProxy({}).map((g) => g.meta.name),
      ['m-file', 'z-old', 'a-new'],
    );
    assert.deepEqual(
      idx.virtualServicesFor('istio-system/ingress', 'apps').map((v) => `${v.meta.namespace}/${v.meta.name}`),
      ['aa/m-file', 'zz/m-file', 'apps/z-old', 'apps/a-new'],
    );
  });
});
