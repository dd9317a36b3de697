/**
 * The Kubernetes client against a real kube-apiserver: every verb and patch type meshpilot uses,
 * paging, typed errors, the watch stream, and each way of authenticating (client certificate,
 * token, token file re-read after a 401, exec plugin, the in-cluster service account).
 */
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { KUBE_SETUP_TIMEOUT_MS, kubeSkipReason, startKubeCluster, type KubeCluster } from '../../test/support/kube.js';
import { tempDir, type TempDir } from '../../test/support/temp-dir.js';
import { KubeApiError, KubeClient, statusCodeOf } from './client.js';
import { fromKubeconfigFiles, fromKubeconfigText, inClusterKubeConfig } from './kubeconfig.js';
import type { KubeJsonObject } from './kube-object.js';

const skip = kubeSkipReason();
let cluster: KubeCluster;
let dir: TempDir;
let api: KubeClient;
let ns = '';

interface ConfigMap extends KubeJsonObject {
  data?: Record<string, string>;
}

describe('Kubernetes client on a real API server', { skip }, () => {
  before(
    async () => {
      cluster = await startKubeCluster();
      dir = tempDir('kube-client');
      api = new KubeClient(cluster.kubeConfig);
      ns = await cluster.namespace('client');
    },
    { timeout: KUBE_SETUP_TIMEOUT_MS },
  );
  after(async () => {
    await cluster?.stop();
    await dir?.remove();
  });

  const cms = (): string => `/api/v1/namespaces/${ns}/configmaps`;

  it('creates, reads, replaces, patches (merge, strategic, JSON Patch, apply) and deletes; errors carry status and reason', async () => {
    const created = await api.create<ConfigMap>(cms(), { metadata: { name: 'a', labels: { app: 'x' } }, data: { one: '1' } });
    assert.equal(created.metadata?.name, 'a');
    const rv = created.metadata?.resourceVersion ?? '';
    const conflict = await api.create(cms(), { metadata: { name: 'a' } }).then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(conflict instanceof KubeApiError);
    assert.equal(conflict.status, 409);
    assert.equal(conflict.reason, 'AlreadyExists');
    assert.match(conflict.message, /configmaps "a" already exists/);

    const replaced = await api.update<ConfigMap>(`${cms()}/a`, { metadata: { name: 'a', resourceVersion: rv }, data: { two: '2' } });
    assert.deepEqual(replaced.data, { two: '2' });
    const stale = await api.update(`${cms()}/a`, { metadata: { name: 'a', resourceVersion: rv }, data: {} }).catch((e: unknown) => e);
    assert.equal(statusCodeOf(stale), 409, 'a PUT at an old resourceVersion is a Conflict');

    await api.patch(`${cms()}/a`, 'merge', { data: { three: '3' } });
    await api.patch(`${cms()}/a`, 'strategic', { metadata: { labels: { tier: 'b' } } });
    await api.patch(`${cms()}/a`, 'json', [{ op: 'add', path: '/data/four', value: '4' }]);
    await api.patch(
      `${cms()}/a`,
      'apply',
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' }, data: { five: '5' } },
      {
        fieldManager: 'client-test',
        force: true,
      },
    );
    const got = await api.get<ConfigMap>(`${cms()}/a`);
    assert.deepEqual(got.data, { two: '2', three: '3', four: '4', five: '5' });
    assert.deepEqual(got.metadata?.labels, { tier: 'b' }, 'the PUT replaced the labels');
    const failedTest = await api
      .patch(`${cms()}/a`, 'json', [{ op: 'test', path: '/metadata/resourceVersion', value: '1' }])
      .catch((e: unknown) => e);
    assert.ok(failedTest instanceof KubeApiError && (failedTest.status === 422 || failedTest.status === 409), String(failedTest));

    const dryRun = await api.create<ConfigMap>(cms(), { metadata: { name: 'dry' } }, { dryRun: 'All' });
    assert.equal(dryRun.metadata?.name, 'dry');
    assert.equal(await api.getOrUndefined(`${cms()}/dry`), undefined, 'a dry run writes nothing');

    await api.delete(`${cms()}/a`);
    const gone = await api.get(`${cms()}/a`).catch((e: unknown) => e);
    assert.ok(gone instanceof KubeApiError);
    assert.equal(gone.status, 404);
    assert.equal(gone.reason, 'NotFound');
    assert.equal(gone.code, 'NOT_FOUND');
  });

  it('lists page by page with selectors, and all pages at once', async () => {
    for (let i = 0; i < 5; i++) await api.create(cms(), { metadata: { name: `p${i}`, labels: { page: i % 2 === 0 ? 'even' : 'odd' } } });
    const first = await api.list<ConfigMap>(cms(), { labelSelector: 'page', limit: 2 });
    assert.equal(first.items.length, 2);
    assert.ok(first.metadata?.continue, 'a continue token for the rest');
    const second = await api.list<ConfigMap>(cms(), { labelSelector: 'page', limit: 2, continueToken: first.metadata.continue });
    assert.deepEqual(
      [...first.items, ...second.items].map((c) => c.metadata?.name),
      ['p0', 'p1', 'p2', 'p3'],
    );
    const even = await api.listAll<ConfigMap>(cms(), { labelSelector: 'page=even', limit: 1 });
    assert.deepEqual(
      even.map((c) => c.metadata?.name),
      ['p0', 'p2', 'p4'],
    );
    const byName = await api.listAll<ConfigMap>(`/api/v1/configmaps?fieldSelector=${encodeURIComponent('metadata.name=p3')}`);
    assert.deepEqual(
      byName.map((c) => `${c.metadata?.namespace}/${c.metadata?.name}`),
      [`${ns}/p3`],
      'a query in the path is kept',
    );
  });

  it('watches from a resourceVersion: events as they happen, bookmarks, the server ending the stream; abort ends it at once', async () => {
    const list = await api.list(cms(), { limit: 1 });
    const events: string[] = [];
    let bookmarkRv = '';
    const watching = api.watch(
      cms(),
      { resourceVersion: list.metadata?.resourceVersion, allowWatchBookmarks: true, timeoutSeconds: 4 },
      (type, object) => {
        const o = object as KubeJsonObject;
        if (type === 'BOOKMARK') bookmarkRv = o.metadata?.resourceVersion ?? '';
        else events.push(`${type} ${o.metadata?.name}`);
      },
    );
    await api.create(cms(), { metadata: { name: 'w' } });
    await api.patch(`${cms()}/w`, 'merge', { data: { k: 'v' } });
    await api.delete(`${cms()}/w`);
    const started = Date.now();
    await watching; // the server ends it after timeoutSeconds
    assert.deepEqual(events, ['ADDED w', 'MODIFIED w', 'DELETED w']);
    assert.ok(Date.now() - started < 10_000);
    assert.notEqual(bookmarkRv, '', 'the server sent a bookmark before ending the watch');

    const ctrl = new AbortController();
    const aborted = api.watch(cms(), { timeoutSeconds: 60 }, () => {}, ctrl.signal);
    setTimeout(() => ctrl.abort(), 200);
    const t0 = Date.now();
    await aborted;
    assert.ok(Date.now() - t0 < 5_000, 'an aborted watch resolves');
  });

  it('a watch from a resourceVersion older than the watch cache of the server ends with 410 Expired (what makes the reflector list again)', async () => {
    const old = (await api.list(cms(), { limit: 1 })).metadata?.resourceVersion ?? '';
    for (let i = 0; i < 3; i++) await api.create(cms(), { metadata: { name: `c${i}` } });
    await cluster.restartApiserver(); // its watch cache starts over at the current revision
    const errors: unknown[] = [];
    const end = await api
      .watch(cms(), { resourceVersion: old, timeoutSeconds: 5 }, (type, object) => {
        if (type === 'ERROR') errors.push(object);
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    const codes = [...errors.map((e) => (e as { code?: number }).code), statusCodeOf(end)];
    assert.ok(codes.includes(410), `410: ${JSON.stringify(errors)} ${String(end)}`);
  });

  it('authenticates with a bearer token, a token file (read again after a 401), an exec plugin, and as a service account in a Pod', async () => {
    const kubeconfig = readFileSync(cluster.kubeconfigPath, 'utf8');
    const token = new KubeClient(fromKubeconfigFiles([cluster.kubeconfigPath], 'meshpilot-test-token'));
    assert.equal((await token.get<ConfigMap>(`/api/v1/namespaces/${ns}`)).metadata?.name, ns);

    const adminToken = readFileSync(cluster.env.KUBE_TOKEN_FILE ?? '', 'utf8').trim();
    const caData = readFileSync(cluster.env.KUBE_CA_FILE ?? '').toString('base64');
    const withUser = (user: string): string =>
      [
        `clusters: [{name: c, cluster: {server: "${cluster.url}", certificate-authority-data: ${caData}}}]`,
        `users: [{name: u, user: ${user}}]`,
        'contexts: [{name: x, context: {cluster: c, user: u}}]',
        'current-context: x',
      ].join('\n');

    const tokenFile = join(dir.path, 'token');
    writeFileSync(tokenFile, 'not-a-valid-token');
    const rotating = new KubeClient(fromKubeconfigText(withUser(`{tokenFile: ${tokenFile}}`)));
    const refused = await rotating.get('/api/v1/namespaces').catch((e: unknown) => e);
    assert.equal(statusCodeOf(refused), 401);
    assert.ok(refused instanceof KubeApiError && refused.code === 'UNAUTHENTICATED');
    writeFileSync(tokenFile, `${adminToken}\n`); // the kubelet rotated it
    assert.ok(Array.isArray((await rotating.list('/api/v1/namespaces')).items), 'a 401 reads the token file again');

    const plugin = join(dir.path, 'get-token');
    writeFileSync(
      plugin,
      `#!/bin/sh\n[ "$EXTRA" = "yes" ] || exit 3\necho '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"${adminToken}"}}'\n`,
    );
    chmodSync(plugin, 0o755);
    const exec = new KubeClient(
      fromKubeconfigText(
        withUser(`{exec: {apiVersion: client.authentication.k8s.io/v1, command: ./get-token, env: [{name: EXTRA, value: "yes"}]}}`),
        {
          baseDir: dir.path,
        },
      ),
    );
    assert.ok(Array.isArray((await exec.list('/api/v1/namespaces')).items));

    const sa = join(dir.path, 'sa');
    mkdirSync(sa);
    writeFileSync(join(sa, 'token'), adminToken);
    writeFileSync(join(sa, 'ca.crt'), readFileSync(cluster.env.KUBE_CA_FILE ?? ''));
    const url = new URL(cluster.url);
    const inCluster = new KubeClient(inClusterKubeConfig({ KUBERNETES_SERVICE_HOST: url.hostname, KUBERNETES_SERVICE_PORT: url.port }, sa));
    assert.ok(Array.isArray((await inCluster.list('/api/v1/namespaces')).items));

    // A remote cluster's kubeconfig as a Secret carries it: the admin file's text with embedded certificates.
    const remote = new KubeClient(fromKubeconfigText(kubeconfig, { origin: 'Secret istio-system/remote' }));
    assert.equal((await remote.get<ConfigMap>(`/api/v1/namespaces/${ns}`)).metadata?.name, ns);
  });
});
