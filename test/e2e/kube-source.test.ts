/**
 * Against a real kube-apiserver + etcd (../shared/kube) with Istio's CRDs from
 * istio/api: the Kubernetes config source lists and watches every Istio kind, validates each
 * object as files are validated, follows creates, patches and deletes, honours
 * discoverySelectors, and loses no event when its watches break — on a cut connection (resumed
 * from the resourceVersion) and across an API server restart (410 → relist, net difference).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { CoreV1Api } from '@kubernetes/client-node';
import { formatConfigError, type ConfigError } from '../../src/config/config.js';
import { KINDS, type KindName } from '../../src/config/kinds.js';
import { ConfigStore } from '../../src/config/store.js';
import type { ConfigChange, ConfigSink } from '../../src/config/store-types.js';
import { KubeConfigSource, type KubeConfigSourceOptions } from '../../src/config/sources/kube/index.js';
import { silentLogger } from '../../src/util/log.js';
import { KUBE_SETUP_TIMEOUT_MS, kubeSkipReason, startKubeCluster, type KubeCluster } from '../support/kube.js';
import { IstioClient, type IstioObject } from '../support/kube-objects.js';
import { startTcpRelay, type TcpRelay } from '../support/kube-proxy.js';
import { waitFor } from '../support/wait.js';

const skip = kubeSkipReason();
const FAST = { initialMs: 50, maxMs: 500 } as const;

let cluster: KubeCluster;
let istio: IstioClient;
const running: KubeConfigSource[] = [];
const relays: TcpRelay[] = [];

function vs(namespace: string, name: string, host: string, apiVersion = 'networking.istio.io/v1'): IstioObject {
  return {
    apiVersion,
    kind: 'VirtualService',
    metadata: { name, namespace },
    spec: { hosts: [host], http: [{ route: [{ destination: { host } }] }] },
  };
}

function dr(namespace: string, name: string, host: string, apiVersion = 'networking.istio.io/v1beta1'): IstioObject {
  return {
    apiVersion,
    kind: 'DestinationRule',
    metadata: { name, namespace },
    spec: { host, subsets: [{ name: 'v1', labels: { version: 'v1' } }] },
  };
}

/** A sink that feeds a store and records every change and error report the source made. */
class Recorder implements ConfigSink {
  readonly store = new ConfigStore();
  readonly changes: ConfigChange[] = [];
  errors: readonly ConfigError[] = [];
  apply(changes: readonly ConfigChange[]): void {
    this.changes.push(...changes);
    this.store.apply(changes);
  }
  reportErrors(_source: string, errors: readonly ConfigError[]): void {
    this.errors = errors;
  }
  /** `Kind/ns/name@specJSON` of every object of this namespace, sorted. */
  content(namespace: string, kinds: readonly KindName[] = ['VirtualService', 'DestinationRule', 'AuthorizationPolicy']): string[] {
    const snap = this.store.snapshot();
    return kinds
      .flatMap((k) => snap.list(k, namespace).map((c) => `${k}/${c.meta.namespace}/${c.meta.name}@${c.meta.resourceVersion}`))
      .sort();
  }
  /** The changes since index `from`, as `upsert|delete Kind/ns/name`, sorted. */
  changesSince(from: number): string[] {
    return this.changes
      .slice(from)
      .map((c) =>
        c.type === 'upsert'
          ? `upsert ${c.config.meta.kind}/${c.config.meta.namespace}/${c.config.meta.name}`
          : `delete ${c.key.kind}/${c.key.namespace}/${c.key.name}`,
      )
      .sort();
  }
}

async function startSource(opts: Partial<KubeConfigSourceOptions> = {}): Promise<{ source: KubeConfigSource; rec: Recorder }> {
  const source = new KubeConfigSource({ kubeConfig: cluster.kubeConfig, logger: silentLogger, backoff: FAST, ...opts });
  running.push(source);
  const rec = new Recorder();
  await source.start(rec);
  return { source, rec };
}

/** What a source that starts now, from a fresh list, holds for a namespace. */
async function freshContent(namespace: string): Promise<string[]> {
  const { source, rec } = await startSource();
  await source.stop();
  return rec.content(namespace);
}

describe('Kubernetes config source against a real API server', { skip }, () => {
  let early: { source: KubeConfigSource; rec: Recorder };

  before(
    async () => {
      cluster = await startKubeCluster();
      early = await startSource(); // no CRDs yet: every kind is "not served", start() still resolves
      await cluster.applyIstioCrds();
      istio = new IstioClient(cluster.clientNode);
    },
    { timeout: KUBE_SETUP_TIMEOUT_MS },
  );

  after(async () => {
    await Promise.all(running.map((s) => s.stop()));
    await Promise.all(relays.map((r) => r.close()));
    await cluster?.stop();
  });

  it('lists every Istio kind at its newest version (v1 where served), then follows creates, patches and deletes as store events', async () => {
    const ns = await cluster.namespace('crud');
    await istio.create(vs(ns, 'reviews', 'reviews'));
    const { source, rec } = await startSource();
    assert.deepEqual(
      rec.content(ns).map((s) => s.split('@')[0]),
      [`VirtualService/${ns}/reviews`],
    );
    const origin = rec.store.snapshot().get('VirtualService', ns, 'reviews')?.meta.origin;
    assert.deepEqual(origin, { file: `k8s://${ns}/VirtualService/reviews` });
    for (const [kind, s] of source.stats()) {
      assert.equal(s.synced, true, kind);
      const newest = KINDS[kind].versions[0];
      assert.ok(s.path.includes(`/${newest}/`), `${kind} watched at its newest version ${newest}: ${s.path}`);
    }

    const events: string[] = [];
    rec.store.onChange((evs) => events.push(...evs.map((e) => `${e.type} ${e.key.kind}/${e.key.name}`)));
    await istio.create(dr(ns, 'reviews', 'reviews')); // written as v1beta1, served as v1
    await waitFor(() => rec.store.snapshot().get('DestinationRule', ns, 'reviews'), { description: 'DestinationRule in the store' });
    await istio.create({
      apiVersion: 'security.istio.io/v1',
      kind: 'AuthorizationPolicy',
      metadata: { name: 'deny-all', namespace: ns },
      spec: {},
    });
    await waitFor(() => rec.store.snapshot().get('AuthorizationPolicy', ns, 'deny-all'), {
      description: 'AuthorizationPolicy in the store',
    });
    await istio.patch('VirtualService', ns, 'reviews', [
      { op: 'replace', path: '/spec/http/0/route/0/destination/host', value: 'ratings' },
    ]);
    await waitFor(
      () => rec.store.snapshot().get('VirtualService', ns, 'reviews')?.spec.http[0]?.route[0]?.destination?.host === 'ratings',
      { description: 'patched VirtualService' },
    );
    await istio.delete('DestinationRule', ns, 'reviews');
    await waitFor(() => !rec.store.snapshot().get('DestinationRule', ns, 'reviews'), { description: 'DestinationRule deleted' });
    assert.deepEqual(events, [
      'add DestinationRule/reviews',
      'add AuthorizationPolicy/deny-all',
      'update VirtualService/reviews',
      'delete DestinationRule/reviews',
    ]);
    assert.deepEqual(rec.content(ns), await freshContent(ns));
  });

  it('a source started before the CRDs existed picks the kinds up once they are installed', async () => {
    for (const [kind, st] of early.source.stats()) assert.equal(st.synced, true, kind);
    const ns = await cluster.namespace('early');
    await istio.create(vs(ns, 'late', 'late'));
    await waitFor(() => early.rec.content(ns).length === 1, { timeoutMs: 20_000, description: 'object of a CRD installed after start' });
    for (const [kind, st] of early.source.stats()) assert.ok(st.path.includes(`/${KINDS[kind].versions[0]}/`), `${kind}: ${st.path}`);
  });

  it('reports an invalid VirtualService created through the API with kind, name and field, and skips it; the rest applies', async () => {
    const ns = await cluster.namespace('invalid');
    await istio.create(vs(ns, 'good', 'good'));
    // Passes the CRD's schema, fails istiod's validation: no http, tcp or tls route.
    await istio.create({
      apiVersion: 'networking.istio.io/v1',
      kind: 'VirtualService',
      metadata: { name: 'bad', namespace: ns },
      spec: { hosts: ['bad'] },
    });
    const { rec } = await startSource();
    assert.deepEqual(
      rec.content(ns).map((s) => s.split('@')[0]),
      [`VirtualService/${ns}/good`],
    );
    const mine = rec.errors.filter((e) => e.namespace === ns);
    assert.deepEqual(mine.map(formatConfigError), [
      `k8s://${ns}/VirtualService/bad VirtualService ${ns}/bad spec: http, tcp or tls must be provided in virtual service`,
    ]);

    // Fixed: applies, and its error goes away.
    await istio.patch('VirtualService', ns, 'bad', [
      { op: 'add', path: '/spec/http', value: [{ route: [{ destination: { host: 'bad' } }] }] },
    ]);
    await waitFor(() => rec.store.snapshot().get('VirtualService', ns, 'bad'), { description: 'fixed VirtualService applied' });
    assert.deepEqual(
      rec.errors.filter((e) => e.namespace === ns),
      [],
    );

    // Broken again: reported, and the last good version stays (as with files).
    await istio.patch('VirtualService', ns, 'good', [{ op: 'remove', path: '/spec/http' }]);
    await waitFor(() => rec.errors.some((e) => e.namespace === ns && e.name === 'good'), { description: 'error for the broken update' });
    assert.equal(rec.store.snapshot().get('VirtualService', ns, 'good')?.spec.http.length, 1);
  });

  it('discoverySelectors: only objects of selected namespaces; relabelling a namespace adds or removes its objects', async () => {
    const on = await cluster.namespace('sel-on', { mesh: 'on' });
    const off = await cluster.namespace('sel-off');
    await istio.create(vs(on, 'a', 'a'));
    await istio.create(vs(off, 'b', 'b'));
    const { rec } = await startSource({ discoverySelectors: [{ matchLabels: { mesh: 'on' } }] });
    assert.equal(rec.content(on).length, 1);
    assert.equal(rec.content(off).length, 0);
    const core = cluster.clientNode.makeApiClient(CoreV1Api);
    await core.patchNamespace({ name: off, body: [{ op: 'add', path: '/metadata/labels/mesh', value: 'on' }] });
    await waitFor(() => rec.content(off).length === 1, { description: 'objects of the newly selected namespace' });
    await core.patchNamespace({ name: on, body: [{ op: 'remove', path: '/metadata/labels/mesh' }] });
    await waitFor(() => rec.content(on).length === 0, { description: 'objects of the deselected namespace removed' });
  });

  const EXPECTED_CHANGES = (ns: string): string[] =>
    [
      `upsert VirtualService/${ns}/created`,
      `upsert VirtualService/${ns}/patched`,
      `delete VirtualService/${ns}/deleted`,
      `upsert DestinationRule/${ns}/added-dr`,
      `delete DestinationRule/${ns}/dr-deleted`,
    ].sort();

  /**
   * Seeds a namespace, starts a source behind a TCP relay, cuts the relay, makes five changes the
   * source cannot see (plus whatever `meanwhile` does), lets it reconnect and waits until its store
   * equals a fresh list. Returns the source and the changes it made since the cut.
   */
  async function breakWatch(prefix: string, meanwhile: () => Promise<void>): Promise<{ source: KubeConfigSource; listsBefore: number }> {
    const ns = await cluster.namespace(prefix);
    for (const name of ['patched', 'deleted', 'same']) await istio.create(vs(ns, name, name));
    await istio.create(dr(ns, 'dr-deleted', 'y'));
    const relay = await startTcpRelay(cluster.url);
    relays.push(relay);
    const { source, rec } = await startSource({ kubeConfig: cluster.kubeConfigVia(relay.url) });
    const before = rec.changes.length;
    const listsBefore = source.stats().get('VirtualService')?.lists ?? 0;

    await relay.cut();
    await istio.create(vs(ns, 'created', 'created'));
    await istio.patch('VirtualService', ns, 'patched', [{ op: 'replace', path: '/spec/hosts/0', value: 'patched-2' }]);
    await istio.delete('VirtualService', ns, 'deleted');
    await istio.create(dr(ns, 'added-dr', 'x'));
    await istio.delete('DestinationRule', ns, 'dr-deleted');
    await meanwhile();
    await relay.resume();

    const fresh = await freshContent(ns);
    await waitFor(() => JSON.stringify(rec.content(ns)) === JSON.stringify(fresh), {
      timeoutMs: 30_000,
      description: 'store equal to a fresh list',
    });
    // Only the five real changes: unchanged objects (`same`, other namespaces) raise nothing, nothing comes twice.
    assert.deepEqual(rec.changesSince(before), EXPECTED_CHANGES(ns));
    return { source, listsBefore };
  }

  it('a watch broken mid-stream resumes from its resourceVersion: nothing lost, nothing twice', async () => {
    const { source, listsBefore } = await breakWatch('cut', async () => {});
    const vsStats = source.stats().get('VirtualService');
    assert.equal(vsStats?.lists, listsBefore, 'resumed the watch without listing again');
    assert.ok((vsStats?.errors ?? 0) >= 1, 'the cut was seen');
  });

  it('across an API server restart the watch expires (410) and a relist applies the net difference', async () => {
    // Same etcd; the restarted server's watch cache starts after the changes, so old resourceVersions are gone.
    const { source } = await breakWatch('restart', () => cluster.restartApiserver());
    await waitFor(() => [...source.stats().values()].every((s) => s.lists >= 2), {
      timeoutMs: 30_000,
      description: 'every kind listed again',
    });
    assert.ok((source.stats().get('VirtualService')?.expired ?? 0) >= 1, 'the VirtualService watch expired (410)');
  });
});
