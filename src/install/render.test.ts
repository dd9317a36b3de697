/**
 * The Helm semantics the renderer reproduces, case by case: strvals (`--set`; expectations from
 * helm.sh/helm/v4 pkg/strvals/parser_test.go TestParseSet), coalescing over chart defaults
 * (pkg/chart/common/util/coalesce.go), schema checks, the engine's template order and the
 * manifest sort (pkg/engine sortTemplates, pkg/release/v1/util InstallOrder); and meshctl's
 * routing of one values tree to the charts. The charts themselves are compared with the real helm
 * in test/e2e/install-render.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Int64 } from '../template/index.js';
import { helmTemplateOrder } from './chart.js';
import { compareByInstallOrder, splitManifests } from './manifests.js';
import { formatManifest, planInstall, renderInstall, ValuesError, type RenderedObject } from './render.js';
import { parseSetInto } from './strvals.js';
import { SchemaValidator } from './values-schema.js';
import { coalesceValues, userValues } from './values.js';

/** Int64 → number, so expectations read as Helm's tests write them. */
function plain(v: unknown): unknown {
  if (v instanceof Int64) return Number(v.value);
  if (Array.isArray(v)) return v.map(plain);
  if (typeof v === 'object' && v !== null) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]));
  return v;
}

function parse(expr: string): unknown {
  const out = {};
  parseSetInto(expr, out);
  return plain(out);
}

describe('--set (strvals)', () => {
  const ok: Array<[string, unknown]> = [
    ['name1=null,f=false,t=true', { name1: null, f: false, t: true }],
    ['name1=value1,name2=value2,', { name1: 'value1', name2: 'value2' }],
    ['name1=,name2=value2', { name1: '', name2: 'value2' }],
    ['leading_zeros=00009', { leading_zeros: '00009' }],
    ['zero_int=0', { zero_int: 0 }],
    ['long_int=1234567890', { long_int: 1234567890 }],
    ['name1=one\\,two,name2=three\\=four', { name1: 'one,two', name2: 'three=four' }],
    ['outer.inner1=value,outer.middle.inner=value', { outer: { inner1: 'value', middle: { inner: 'value' } } }],
    ['name1.name2=', { name1: { name2: '' } }],
    ['name1={value1,value2},name2={1021,902}', { name1: ['value1', 'value2'], name2: [1021, 902] }],
    ['list[0].foo=bar,list[0].hello=world', { list: [{ foo: 'bar', hello: 'world' }] }],
    ['list[0]=foo,list[3]=bar', { list: ['foo', null, null, 'bar'] }],
    ['noval[0]', { noval: [] }],
    ['nested[1][1]=1', { nested: [null, [null, 1]] }],
    ['name1.name2[1].foo=bar,name1.name2[0].foo=bar', { name1: { name2: [{ foo: 'bar' }, { foo: 'bar' }] } }],
    ['a\\.b=c', { 'a.b': 'c' }],
  ];
  for (const [expr, want] of ok) it(`parses ${expr}`, () => assert.deepEqual(parse(expr), want));

  const bad = [
    'name1=value1,,,,name2=value2,',
    'name1,name2=',
    'name1,name2',
    'name1.name2',
    'name1.name2,name1.name3',
    'name1.=name2',
    'name1={1021,902',
    'list[0].foo=bar,list[-30].hello=world',
    'illegal[0]name.foo=bar',
    ']={}].',
  ];
  for (const expr of bad) it(`refuses ${expr}`, () => assert.throws(() => parse(expr), /failed parsing --set data/));

  it('types integers as int64 (what --set gives templates), later --set wins', () => {
    const v = userValues([{ a: { b: 1, c: 'x' } }], ['a.b=2', 'a.b=3']);
    assert.deepEqual(v, { a: { b: new Int64(3n), c: 'x' } });
  });
});

describe("Helm's coalescing over chart defaults", () => {
  it('merges maps, replaces lists and scalars, drops null defaults, and a user null removes a default', () => {
    const defaults = { a: { keep: 1, drop: 2, nil: null }, list: [1, 2], top: null, gone: 'x' };
    const user = { a: { drop: null, add: 3 }, list: [9], gone: null };
    assert.deepEqual(coalesceValues(defaults, user), { a: { keep: 1, add: 3 }, list: [9] });
    assert.deepEqual(defaults.a, { keep: 1, drop: 2, nil: null }, 'defaults are not modified');
  });
});

describe('values schema', () => {
  const schema = new SchemaValidator({
    $defs: { port: { type: 'integer', minimum: 1 } },
    type: 'object',
    additionalProperties: false,
    properties: {
      replicaCount: { type: 'integer', minimum: 0 },
      kind: { enum: ['Deployment', 'DaemonSet'] },
      ports: { type: 'array', items: { $ref: '#/$defs/port' } },
      open: { type: 'object' },
    },
  });
  it('accepts an integral float64 as an integer, as Helm does after its JSON round trip', () => {
    assert.deepEqual(schema.validate({ replicaCount: 2, ports: [80, new Int64(443n)], open: { any: { thing: 1 } } }), []);
  });
  it('names each offending key', () => {
    assert.deepEqual(schema.validate({ replicaCount: new Int64(-1n), kind: 'Job', ports: [0], extra: 1, open: 'x' }), [
      { key: 'replicaCount', message: 'minimum: got -1, want 0' },
      { key: 'kind', message: 'value "Job" is not one of "Deployment", "DaemonSet"' },
      { key: 'ports[0]', message: 'minimum: got 0, want 1' },
      { key: 'extra', message: 'unknown key (additional properties are not allowed here)' },
      { key: 'open', message: 'got string, want object' },
    ]);
  });
});

describe('template and manifest order', () => {
  it("executes deeper templates first, then in reverse lexical order (Istio's zzz_profile.yaml first)", () => {
    assert.deepEqual(
      helmTemplateOrder([
        'c/templates/a.yaml',
        'c/templates/zzz_profile.yaml',
        'c/templates/sub/x.yaml',
        'c/templates/zzy_descope_legacy.yaml',
      ]),
      ['c/templates/sub/x.yaml', 'c/templates/zzz_profile.yaml', 'c/templates/zzy_descope_legacy.yaml', 'c/templates/a.yaml'],
    );
  });
  it('sorts kinds by install order, unknown kinds last and alphabetically, and splits on --- lines', () => {
    assert.deepEqual(['Deployment', 'Zeta', 'CustomResourceDefinition', 'Alpha', 'Namespace'].sort(compareByInstallOrder), [
      'Namespace',
      'CustomResourceDefinition',
      'Deployment',
      'Alpha',
      'Zeta',
    ]);
    assert.deepEqual(splitManifests('\n---\na: 1\n---  \n\n---\nb: 2\n'), ['a: 1\n', 'b: 2\n']);
  });
});

describe('meshctl values → charts', () => {
  it("installs the profile's releases; cni.enabled adds the CNI and tells istiod; gateway keys lose their prefix", async () => {
    const { releases } = await planInstall({
      profile: 'demo',
      sets: ['cni.enabled=true', 'gateways.istio-ingressgateway.service.type=NodePort', 'global.hub=example.com'],
      valuesFiles: [],
    });
    assert.deepEqual(
      releases.map((r) => `${r.chart}:${r.release}`),
      ['base:istio-base', 'meshpilot:istiod', 'cni:istio-cni', 'gateway:istio-ingressgateway', 'gateway:istio-egressgateway'],
    );
    const byName = new Map(releases.map((r) => [r.release, r.sets]));
    assert.deepEqual(byName.get('istiod'), ['profile=demo', 'global.hub=example.com', 'pilot.cni.enabled=true']);
    assert.deepEqual(byName.get('istio-cni'), ['profile=demo', 'global.hub=example.com', 'cni.enabled=true']);
    assert.deepEqual(byName.get('istio-ingressgateway'), ['profile=demo', 'global.hub=example.com', 'service.type=NodePort']);
    assert.deepEqual(byName.get('istio-egressgateway'), ['profile=demo', 'global.hub=example.com']);
    // istioctl's egress default comes first, as a values document: the user's files and --set win.
    assert.deepEqual(releases.at(-1)?.valuesDocs, [{ service: { type: 'ClusterIP' } }]);
  });

  it('another system namespace is also global.istioNamespace (as istioctl --istioNamespace)', async () => {
    const { releases } = await planInstall({ profile: 'minimal', namespace: 'mesh-system', sets: [], valuesFiles: [] });
    assert.deepEqual(
      releases.map((r) => [r.namespace, r.sets]),
      [
        ['mesh-system', ['profile=minimal', 'global.istioNamespace=mesh-system']],
        ['mesh-system', ['profile=minimal', 'global.istioNamespace=mesh-system']],
      ],
    );
  });

  it('a revision names the control plane release and reaches every chart', async () => {
    const { releases } = await planInstall({ profile: 'minimal', revision: 'canary', sets: [], valuesFiles: [] });
    assert.deepEqual(
      releases.map((r) => [r.release, r.sets]),
      [
        ['istio-base', ['profile=minimal', 'revision=canary']],
        ['istiod-canary', ['profile=minimal', 'revision=canary']],
      ],
    );
  });

  const refused: Array<[string[], string, RegExp]> = [
    [['pilot.replicaCount=-1'], 'pilot.replicaCount', /minimum: got -1, want 0 \(chart meshpilot/],
    [['pilot.replicaCountt=2'], 'pilot.replicaCountt', /unknown key/],
    [['profile=production'], 'profile', /unknown profile "production" \(one of default, demo, minimal, remote, empty\)/],
    [
      ['gateways.istio-ingressgateway.replicaCount=two'],
      'gateways.istio-ingressgateway.replicaCount',
      /got string, want integer or null \(chart gateway/,
    ],
    [['global.proxy.imagee=x'], 'global.proxy.imagee', /unknown key/],
    [['pilot.replicaCount=2,cni.enabled=true'], 'pilot.replicaCount=2,cni.enabled=true', /several components in one --set/],
    [['a.b'], 'a.b', /key "b" has no value/],
    [
      ['meshConfig.accessLogFilee=/dev/stdout'],
      'meshConfig.accessLogFilee',
      /meshpilot would refuse the mesh config: ConfigMap istio key mesh: field accessLogFilee/,
    ],
  ];
  for (const [sets, key, message] of refused) {
    it(`refuses --set ${sets.join(' ')} naming ${key}`, async () => {
      await assert.rejects(renderInstall({ sets, valuesFiles: [] }), (e: unknown) => {
        assert.ok(e instanceof ValuesError, String(e));
        assert.equal(e.key, key);
        assert.match(e.message, message);
        assert.ok(!e.message.includes('\n'), 'one line');
        return true;
      });
    });
  }

  it("prints helm template's layout", () => {
    const o: RenderedObject = {
      chart: 'base',
      release: 'istio-base',
      template: 'base/templates/a.yaml',
      object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'istio-system' }, data: { b: '1', a: 'y' } },
    };
    assert.equal(
      formatManifest([o, o]),
      '---\n# Source: base/templates/a.yaml\napiVersion: v1\ndata:\n  a: "y"\n  b: "1"\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: istio-system\n'.repeat(
        2,
      ),
    );
  });
});

describe('the remote profile (multicluster primary-remote)', () => {
  const objects = async (sets: string[]): Promise<Map<string, Record<string, unknown>>> => {
    const { objects } = await renderInstall({ profile: 'remote', sets, valuesFiles: [] });
    return new Map(objects.map((o) => [`${o.object.kind}/${o.object.metadata.name}`, o.object as Record<string, unknown>]));
  };

  it("points the istiod Service at global.remotePilotAddress: an EndpointSlice on an IP, ExternalName on a host; the reader's RBAC always", async () => {
    const ip = await objects(['global.remotePilotAddress=10.0.0.5']);
    assert.equal(ip.has('Deployment/istiod'), false, 'no control plane in a remote cluster');
    for (const k of [
      'ServiceAccount/istio-reader-service-account',
      'ClusterRole/istio-reader-clusterrole-istio-system',
      'ClusterRoleBinding/istio-reader-clusterrole-istio-system',
    ])
      assert.ok(ip.has(k), k);
    const slice = ip.get('EndpointSlice/istiod') as {
      addressType: string;
      endpoints: { addresses: string[] }[];
      ports: { port: number }[];
    };
    assert.equal(slice.addressType, 'IPv4');
    assert.deepEqual(slice.endpoints[0]?.addresses, ['10.0.0.5']);
    assert.deepEqual(
      slice.ports.map((p) => p.port),
      [15012, 15017],
    );
    const webhook = ip.get('MutatingWebhookConfiguration/istio-sidecar-injector') as {
      webhooks: { clientConfig: { service?: { name: string } } }[];
    };
    assert.ok(
      webhook.webhooks.every((w) => w.clientConfig.service?.name === 'istiod'),
      'injection goes through the istiod Service',
    );

    const host = await objects(['global.remotePilotAddress=istiod.primary.example.com']);
    assert.equal(host.has('EndpointSlice/istiod'), false);
    assert.deepEqual((host.get('Service/istiod') as { spec: { type: string; externalName: string } }).spec, {
      ...(host.get('Service/istiod') as { spec: object }).spec,
      type: 'ExternalName',
      externalName: 'istiod.primary.example.com',
    });

    const none = await objects([]);
    assert.equal(none.has('Service/istiod') || none.has('EndpointSlice/istiod'), false, 'without the address, no istiod Service');
  });
});
