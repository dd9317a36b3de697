/**
 * EnvoyFilter: order, proxy matching, merge semantics, list operations, the broken-patch case and
 * the sharing of patched resources between proxies (the istiod-golden test covers each applyTo and
 * operation against istiod's output: test/scenarios/envoyfilter).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { create, fromBinary } from '@bufbuild/protobuf';
import { ClusterSchema, type Cluster } from '../../gen/envoy/config/cluster/v3/cluster_pb.js';
import { compareEnvoyFilters } from '../../model/indexes/envoy-filter-index.js';
import { createLogger } from '../../util/log.js';
import { GeneratorRegistry } from '../../xds/generator.js';
import { TypeUrl } from '../../xds/type-urls.js';
import { generateFor, loadScenario, proxyFor, type NodeSpec } from '../../../test/support/scenario.js';
import { registerEnvoyGenerators } from '../envoy-generators.js';
import { configCredentials } from '../gateway/config-credentials.js';
import { insertAfterFirst, insertBeforeFirst, removeAll, replaceFirst } from './list-ops.js';
import {
  ApplyTo,
  decodePatchValue,
  envoyFilterRegistries,
  Op,
  PatchContext,
  type CompiledEnvoyFilter,
  type CompiledPatch,
} from '../../model/envoy-filter.js';
import { patchBootstrap } from './extension-patch.js';
import { BootstrapSchema } from '../../gen/envoy/config/bootstrap/v3/bootstrap_pb.js';
import { TypedExtensionConfigSchema } from '../../gen/envoy/config/core/v3/extension_pb.js';
import { mergeMessage } from './proto-merge.js';
import { PushContext } from '../../model/push-context.js';
import type { Proxy } from '../../model/proxy.js';
import { pushRequest, type PushRequest } from '../../model/push-request.js';
import type { XdsResource } from '../../xds/resource.js';
import { pushScope } from '../../xds/push-scope.js';

const MESH = `
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: {name: db, namespace: shop}
spec:
  hosts: [db.shop.svc.cluster.local]
  addresses: [10.0.0.30]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{number: 3306, name: tcp, protocol: TCP}]
  endpoints: [{address: 10.1.0.30}]
`;
const WEB: NodeSpec = {
  id: 'sidecar~10.1.0.10~web-1.shop~shop.svc.cluster.local',
  labels: { app: 'web' },
  metadata: { ISTIO_VERSION: '1.31.0' },
};
const API: NodeSpec = {
  id: 'sidecar~10.1.0.11~api-1.shop~shop.svc.cluster.local',
  labels: { app: 'api' },
  metadata: { ISTIO_VERSION: '1.31.0', FOO: 'bar' },
};
const OLD: NodeSpec = {
  id: 'sidecar~10.1.0.12~old-1.shop~shop.svc.cluster.local',
  labels: { app: 'web' },
  metadata: { ISTIO_VERSION: '1.20.3' },
};
const DB = 'outbound|3306||db.shop.svc.cluster.local';

const ef = (name: string, spec: string, namespace = 'shop'): string =>
  `---\napiVersion: networking.istio.io/v1alpha3\nkind: EnvoyFilter\nmetadata: {name: ${name}, namespace: ${namespace}}\nspec:\n${spec}`;

async function world(
  yaml: string,
): Promise<{ push: PushContext; lines: string[]; cluster: (n: NodeSpec, name?: string) => Cluster | undefined }> {
  const dir = mkdtempSync(join(tmpdir(), 'ef-unit-'));
  try {
    writeFileSync(join(dir, 'config.yaml'), MESH + yaml);
    const lines: string[] = [];
    const logger = createLogger({ level: 'warn', sink: (l) => lines.push(l) });
    const { push } = await loadScenario(dir);
    const gens = registerEnvoyGenerators(new GeneratorRegistry(), { logger, credentials: (p) => configCredentials(p.config, logger) });
    // One Proxy object per node, as one connection keeps it (problems are reported once per proxy).
    const proxies = new Map<string, Proxy>();
    const proxyOf = (n: NodeSpec): Proxy => proxies.get(n.id) ?? proxies.set(n.id, proxyFor(n)).get(n.id)!;
    const cluster = (n: NodeSpec, name = DB): Cluster | undefined =>
      generateFor(push, gens, proxyOf(n)).clusters.find((c) => c.name === name);
    return { push, lines, cluster };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const merge = (
  ctx = 'SIDECAR_OUTBOUND',
  value = '{per_connection_buffer_limit_bytes: 99}',
  match = '{service: db.shop.svc.cluster.local}',
): string =>
  `  configPatches:\n    - applyTo: CLUSTER\n      match: {context: ${ctx}, cluster: ${match}}\n      patch: {operation: MERGE, value: ${value}}\n`;

describe('EnvoyFilter order', () => {
  const f = (namespace: string, name: string, priority = 0, created = 0): CompiledEnvoyFilter => ({
    namespace,
    name,
    priority,
    created,
    selector: undefined,
    targetRefs: [],
    patches: [],
    errors: [],
    version: `${namespace}/${name}`,
  });
  test('priority, then the root namespace, then creation time, then name.namespace', () => {
    const sorted = [
      f('shop', 'a', 5),
      f('shop', 'z'),
      f('istio-system', 'y'),
      f('shop', 'b', 0, 10),
      f('shop', 'c', -1),
      f('shop', 'b', 0, 5),
    ]
      .sort((a, b) => compareEnvoyFilters(a, b, 'istio-system'))
      .map((x) => `${x.priority}/${x.namespace}/${x.name}/${x.created}`);
    assert.deepEqual(sorted, ['-1/shop/c/0', '0/istio-system/y/0', '0/shop/z/0', '0/shop/b/5', '0/shop/b/10', '5/shop/a/0']);
  });

  test('later patches see earlier ones: MERGEs of one field apply in order (the last wins)', async () => {
    const w = await world(
      ef('a', merge(undefined, '{per_connection_buffer_limit_bytes: 1}')) +
        ef('b', `  priority: -1\n${merge(undefined, '{per_connection_buffer_limit_bytes: 2}')}`) +
        ef('root', merge(undefined, '{per_connection_buffer_limit_bytes: 3}'), 'istio-system'),
    );
    // b (priority -1) first, then root (root namespace before shop at priority 0), then a.
    assert.equal(w.cluster(WEB)?.perConnectionBufferLimitBytes, 1);
  });
});

describe('EnvoyFilter creation time', () => {
  test('with metadata.creationTimestamp (API objects), the older filter applies first; without, the name decides', async () => {
    const timed = (name: string, at: string, v: number): string =>
      ef(name, merge(undefined, `{per_connection_buffer_limit_bytes: ${v}}`)).replace(
        `name: ${name}, namespace: shop}`,
        `name: ${name}, namespace: shop, creationTimestamp: "${at}"}`,
      );
    const w = await world(timed('a', '2024-01-02T00:00:00Z', 1) + timed('b', '2024-01-01T00:00:00Z', 2));
    assert.equal(w.cluster(WEB)?.perConnectionBufferLimitBytes, 1, 'b (older) first, then a: a wins');
    const byName = await world(
      ef('a', merge(undefined, '{per_connection_buffer_limit_bytes: 1}')) +
        ef('b', merge(undefined, '{per_connection_buffer_limit_bytes: 2}')),
    );
    assert.equal(byName.cluster(WEB)?.perConnectionBufferLimitBytes, 2, 'a then b by name: b wins');
  });
});

describe('EnvoyFilter matching', () => {
  test('workloadSelector, proxy version regex and node metadata select the proxies', async () => {
    const w = await world(
      ef('sel', `  workloadSelector:\n    labels: {app: web}\n${merge()}`) +
        ef(
          'ver',
          `  configPatches:\n    - applyTo: CLUSTER\n      match: {context: SIDECAR_OUTBOUND, proxy: {proxyVersion: '^1\\.20.*'}, cluster: {portNumber: 3306}}\n      patch: {operation: MERGE, value: {connect_timeout: 7s}}\n`,
        ) +
        ef(
          'meta',
          `  configPatches:\n    - applyTo: CLUSTER\n      match: {context: SIDECAR_OUTBOUND, proxy: {metadata: {FOO: bar}}, cluster: {name: "${DB}"}}\n      patch: {operation: MERGE, value: {connect_timeout: 9s}}\n`,
        ),
    );
    assert.equal(w.cluster(WEB)?.perConnectionBufferLimitBytes, 99);
    assert.equal(w.cluster(API)?.perConnectionBufferLimitBytes, undefined, 'the selector does not pick api');
    assert.equal(w.cluster(API)?.connectTimeout?.seconds, 9n, 'metadata FOO=bar matches api');
    assert.equal(w.cluster(OLD)?.connectTimeout?.seconds, 7n, 'the 1.20 regex matches the old proxy only');
    assert.notEqual(w.cluster(WEB)?.connectTimeout?.seconds, 7n);
  });

  test('context: an inbound patch does not touch outbound clusters; a cluster match by subset or port that differs misses', async () => {
    const w = await world(ef('in', merge('SIDECAR_INBOUND')) + ef('port', merge(undefined, '{connect_timeout: 4s}', '{portNumber: 9999}')));
    assert.equal(w.cluster(WEB)?.perConnectionBufferLimitBytes, undefined);
    assert.notEqual(w.cluster(WEB)?.connectTimeout?.seconds, 4n);
  });

  test('targetRefs: a Gateway API gateway of that Gateway takes the EnvoyFilter, a sidecar ignores it', async () => {
    const ref = (name: string): string => `  targetRefs: [{group: gateway.networking.k8s.io, kind: Gateway, name: ${name}}]\n`;
    const w = await world(
      ef('ref', `${ref('gw')}${merge('GATEWAY')}`) + ef('other', `${ref('not-gw')}${merge('GATEWAY', '{connect_timeout: 8s}')}`),
    );
    const gw: NodeSpec = {
      id: 'router~10.3.0.1~gw-istio-1.shop~shop.svc.cluster.local',
      labels: { 'gateway.networking.k8s.io/gateway-name': 'gw' },
      metadata: { ISTIO_VERSION: '1.31.0' },
    };
    assert.equal(w.cluster(gw)?.perConnectionBufferLimitBytes, 99);
    assert.notEqual(w.cluster(gw)?.connectTimeout?.seconds, 8n, 'a targetRef to another Gateway does not attach');
    const side = await world(ef('ref', `${ref('gw')}${merge()}`));
    assert.equal(side.cluster(WEB)?.perConnectionBufferLimitBytes, undefined);
  });
});

describe('EnvoyFilter merge semantics (istiod pkg/proto/merge)', () => {
  test('a Duration is replaced whole; lists append; MERGE_AND_REPLACE_LIST replaces them', () => {
    const dst = create(ClusterSchema, { name: 'c', connectTimeout: { seconds: 1n, nanos: 500 }, dnsResolvers: [{}] });
    mergeMessage(ClusterSchema, dst, create(ClusterSchema, { connectTimeout: { seconds: 5n, nanos: 0 }, dnsResolvers: [{}, {}] }));
    assert.deepEqual([dst.connectTimeout?.seconds, dst.connectTimeout?.nanos, dst.dnsResolvers.length, dst.name], [5n, 0, 3, 'c']);
    mergeMessage(ClusterSchema, dst, create(ClusterSchema, { dnsResolvers: [{}] }), true);
    assert.equal(dst.dnsResolvers.length, 1);
  });

  test('list operations act on the first match only (REMOVE on every match)', () => {
    const l = ['a', 'b', 'a'];
    assert.ok(
      insertBeforeFirst(
        l,
        (x) => x === 'a',
        () => 'x',
      ),
    );
    assert.ok(
      insertAfterFirst(
        l,
        (x) => x === 'b',
        () => 'y',
      ),
    );
    assert.ok(
      replaceFirst(
        l,
        (x) => x === 'a',
        () => 'r',
      ),
    );
    assert.ok(
      !replaceFirst(
        l,
        (x) => x === 'zz',
        () => 'r',
      ),
    );
    removeAll(l, (x) => x === 'a');
    assert.deepEqual(
      l,
      ['x', 'r', 'b', 'y'].filter((x) => x !== 'a'),
    );
  });
});

describe('EnvoyFilter broken patch', () => {
  test("a patch that makes a cluster break Envoy's rules is reported for that proxy, which gets the unpatched cluster; the rest still applies", async () => {
    const w = await world(
      ef('bad', `  workloadSelector:\n    labels: {app: web}\n${merge(undefined, '{connect_timeout: -3s}')}`) +
        ef(
          'good',
          `  configPatches:\n    - applyTo: CLUSTER\n      match: {context: SIDECAR_OUTBOUND, cluster: {name: BlackHoleCluster}}\n      patch: {operation: MERGE, value: {per_connection_buffer_limit_bytes: 5}}\n`,
        ),
    );
    const base = await world('');
    const got = w.cluster(WEB)!;
    assert.deepEqual(got, base.cluster(WEB), 'the db cluster is sent as generated');
    assert.equal(w.cluster(WEB, 'BlackHoleCluster')?.perConnectionBufferLimitBytes, 5, 'the valid patch still applies');
    assert.equal(w.lines.length, 1, w.lines.join('\n---\n'));
    const line = JSON.parse(w.lines[0]!) as Record<string, string>;
    assert.equal(line.envoyFilters, 'shop/bad');
    assert.equal(line.proxy, WEB.id);
    assert.match(line.reason ?? '', /connect_timeout/);
    w.cluster(WEB);
    assert.equal(w.lines.length, 1, 'reported once per proxy, not at every push');
    assert.equal(w.cluster(API)?.perConnectionBufferLimitBytes, undefined);
    assert.equal(w.lines.length, 1, 'an unselected proxy has nothing to report');
  });

  test('a patch value that does not decode (unknown Any type) is skipped and reported', async () => {
    const w = await world(
      ef(
        'unknown',
        `  configPatches:\n    - applyTo: HTTP_FILTER\n      patch:\n        operation: INSERT_FIRST\n        value: {name: lua, typed_config: {"@type": type.googleapis.com/no.such.Type}}\n${merge().replace('  configPatches:\n', '')}`,
      ),
    );
    assert.equal(w.cluster(WEB)?.perConnectionBufferLimitBytes, 99, 'the other patch of the filter applies');
    assert.equal(w.push.envoyFilters.errors.length, 1);
    assert.match(w.push.envoyFilters.errors[0] ?? '', /^shop\/unknown: configPatches\[0\]\.patch\.value: .*no\.such\.Type/);
    assert.ok(
      w.lines.some((l) => l.includes('cannot be decoded') && l.includes(WEB.id)),
      w.lines.join('\n'),
    );
  });
});

describe('EnvoyFilter and the shared cache', () => {
  test('an unselected proxy gets the unpatched resource; proxies with the same patches share one patched resource; an edit reaches the selected proxy', async () => {
    const quiet = createLogger({ level: 'error' });
    const gens = registerEnvoyGenerators(new GeneratorRegistry(), {
      logger: quiet,
      credentials: (p) => configCredentials(p.config, quiet),
    });
    const cds = (push: PushContext, n: NodeSpec): readonly XdsResource[] =>
      gens
        .lookup(proxyFor(n), TypeUrl.Cluster)!
        .generate(
          proxyFor(n),
          { typeUrl: TypeUrl.Cluster, names: new Set(), wildcard: true },
          push,
          pushRequest({ full: true, reason: 'config', start: 0 }),
        );
    const db = (rs: readonly XdsResource[]): XdsResource => rs.find((r) => r.name === DB)!;
    const v1 = await world(ef('sel', `  workloadSelector:\n    labels: {app: web}\n${merge()}`));
    const none = await world('');
    const webDb = db(cds(v1.push, WEB));
    assert.equal(fromBinary(ClusterSchema, webDb.value).perConnectionBufferLimitBytes, 99);
    assert.equal(db(cds(v1.push, API)).version, db(cds(none.push, API)).version, 'api: byte for byte what it gets without the EnvoyFilter');
    assert.equal(
      db(cds(v1.push, { ...WEB, id: 'sidecar~10.1.0.13~web-2.shop~shop.svc.cluster.local' })),
      webDb,
      'one patched resource for both web proxies',
    );
    // The edit: a new snapshot on the same cache (as the server's next push).
    const v2 = await world(
      ef('sel', `  workloadSelector:\n    labels: {app: web}\n${merge(undefined, '{per_connection_buffer_limit_bytes: 77}')}`),
    );
    const next = new PushContext({ version: '2', mesh: v1.push.mesh, config: v2.push.snapshot, cache: v1.push.cache, previous: v1.push });
    assert.ok(next.rebuild.rebuilt.includes('envoyFilters'));
    assert.equal(fromBinary(ClusterSchema, db(cds(next, WEB)).value).perConnectionBufferLimitBytes, 77);
    assert.equal(db(cds(next, API)).version, db(cds(none.push, API)).version);
  });

  test('two proxies sharing the unpatched clusters but selected by different EnvoyFilters each get their own patches', async () => {
    const w = await world(
      ef('all', merge()) + ef('web-only', `  workloadSelector:\n    labels: {app: web}\n${merge(undefined, '{connect_timeout: 6s}')}`),
    );
    // api first, so a cache keyed without the patch set would hand web api's result (and back).
    assert.deepEqual([w.cluster(API)?.perConnectionBufferLimitBytes, w.cluster(API)?.connectTimeout?.seconds === 6n], [99, false]);
    assert.deepEqual([w.cluster(WEB)?.perConnectionBufferLimitBytes, w.cluster(WEB)?.connectTimeout?.seconds], [99, 6n]);
    assert.notEqual(w.cluster(API)?.connectTimeout?.seconds, 6n);
  });

  test('push scoping: an EnvoyFilter edit pushes the proxies of its namespace (every proxy for the root namespace)', async () => {
    const a = await world(ef('sel', merge()));
    const b = await world(ef('sel', merge(undefined, '{per_connection_buffer_limit_bytes: 1}')));
    const req = (ns: string): PushRequest =>
      pushRequest({ full: true, reason: 'config', start: 0, configsUpdated: new Set([`EnvoyFilter/${ns}/sel`]) });
    const scope = pushScope(req('shop'), a.push, b.push);
    assert.ok(scope !== 'all' && scope.workloadNamespaces.has('shop') && scope.hosts.size === 0);
    assert.equal(pushScope(req('istio-system'), a.push, b.push), 'all');
  });
});

describe('EnvoyFilter EXTENSION_CONFIG and BOOTSTRAP', () => {
  test('an EXTENSION_CONFIG ADD is served over ECDS when the proxy asks for its name', async () => {
    const w = await world(
      ef(
        'ext',
        `  configPatches:\n    - applyTo: EXTENSION_CONFIG\n      patch:\n        operation: ADD\n        value:\n          name: my-fault\n          typed_config: {"@type": type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault, abort: {http_status: 418, percentage: {numerator: 1}}}\n`,
      ),
    );
    const quiet = createLogger({ level: 'error' });
    const gens = registerEnvoyGenerators(new GeneratorRegistry(), {
      logger: quiet,
      credentials: (p) => configCredentials(p.config, quiet),
    });
    const proxy = proxyFor(WEB);
    const ecds = (names: string[]): readonly XdsResource[] =>
      gens
        .lookup(proxy, TypeUrl.ExtensionConfiguration)!
        .generate(
          proxy,
          { typeUrl: TypeUrl.ExtensionConfiguration, names: new Set(names), wildcard: false },
          w.push,
          pushRequest({ full: true, reason: 'config', start: 0 }),
        );
    const got = ecds(['my-fault', 'other']);
    assert.deepEqual(
      got.map((r) => r.name),
      ['my-fault'],
    );
    const ec = fromBinary(TypedExtensionConfigSchema, got[0]!.value);
    assert.equal(ec.typedConfig?.typeUrl, 'type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault');
    assert.deepEqual(ecds(['other']), []);
  });

  test('BOOTSTRAP MERGE patches merge into a bootstrap in order', () => {
    const b = create(BootstrapSchema, { node: { id: 'n' } });
    const p = (value: unknown): CompiledPatch => ({
      key: 'ns/b',
      applyTo: ApplyTo.BOOTSTRAP,
      operation: Op.MERGE,
      match: undefined,
      context: PatchContext.ANY,
      proxyVersion: undefined,
      value: decodePatchValue(ApplyTo.BOOTSTRAP, value, envoyFilterRegistries().json),
    });
    patchBootstrap(
      {
        patches: new Map([
          [ApplyTo.BOOTSTRAP, [p({ node: { cluster: 'c1' } }), p({ node: { cluster: 'c2' }, stats_flush_interval: '5s' })]],
        ]),
        registry: envoyFilterRegistries().json,
        touched: new Set(),
      },
      b,
    );
    assert.deepEqual([b.node?.id, b.node?.cluster, b.statsFlushInterval?.seconds], ['n', 'c2', 5n]);
  });
});
