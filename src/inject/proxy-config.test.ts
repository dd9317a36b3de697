/**
 * ProxyConfig resources resolved as istiod's EffectiveProxyConfig (precedence: defaults < mesh
 * defaultConfig < root-namespace resource < namespace resource < proxy.istio.io/config annotation <
 * workload-selector resource; env merged per key) and applied where istiod applies them at
 * injection: PROXY_CONFIG (concurrency, image, proxyMetadata — istiod's template passes concurrency
 * to the agent there, not as an argument), the proxy's env (proxyMetadata) and the image variant.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import type { Config } from '../config/config.js';
import { validateObject } from '../config/validation/index.js';
import { builtinInjector } from './config.js';
import { injectionHandler } from './handler.js';
import { injectPod, type InjectionConfig } from './inject.js';
import { injectorSnapshot } from './injector-source.js';
import type { JsonPatchOp } from '../util/json-patch.js';
import { meshConfigFromYaml } from './mesh.js';
import { effectiveProxyConfig, type ProxyConfigSource } from './proxy-config.js';
import { CompiledTemplates, type JsonObject } from './render.js';
import { applyJsonPatch } from './test-support.js';

function proxyConfig(namespace: string, name: string, spec: Record<string, unknown>, creationTimestamp?: string): Config<'ProxyConfig'> {
  const r = validateObject(
    { apiVersion: 'networking.istio.io/v1beta1', kind: 'ProxyConfig', metadata: { name, namespace, creationTimestamp }, spec },
    { file: 'test' },
  );
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.value as Config<'ProxyConfig'>;
}

function source(...cs: Config<'ProxyConfig'>[]): ProxyConfigSource {
  return {
    rootNamespace: 'istio-system',
    list: (ns) => cs.filter((c) => c.meta.namespace === ns).sort((a, b) => a.meta.name.localeCompare(b.meta.name)),
  };
}

const mesh = meshConfigFromYaml('defaultConfig:\n  concurrency: 2\n  proxyMetadata: {A: mesh, M: "1"}\n', 'test mesh');
const resources = source(
  proxyConfig('istio-system', 'mesh-wide', { concurrency: 3, environmentVariables: { A: 'root', R: '1' } }),
  proxyConfig('shop', 'b-namespace', { concurrency: 4, environmentVariables: { N: '1' } }),
  proxyConfig('shop', 'a-namespace-first', { concurrency: 40 }),
  proxyConfig('shop', 'web', {
    selector: { matchLabels: { app: 'web' } },
    concurrency: 6,
    image: { imageType: 'distroless' },
    environmentVariables: { W: '1' },
  }),
);
const ANNOTATION = { 'proxy.istio.io/config': 'concurrency: 5\nproxyMetadata: {A: annotation}\n' };

describe('ProxyConfig precedence (istiod EffectiveProxyConfig)', () => {
  it('the workload selector beats the annotation, which beats the namespace, root and mesh layers; env merges per key', () => {
    const pc = effectiveProxyConfig(mesh, resources, { namespace: 'shop', labels: { app: 'web' }, annotations: ANNOTATION });
    assert.equal(pc.concurrency, 6);
    assert.equal(pc.image?.imageType, 'distroless');
    assert.deepEqual(pc.proxyMetadata, { A: 'annotation', M: '1', R: '1', W: '1' });
  });
  it('without a selecting resource the annotation wins; the namespace layer is the oldest selector-less one (equal creation times: by name)', () => {
    const annotated = effectiveProxyConfig(mesh, resources, { namespace: 'shop', labels: { app: 'api' }, annotations: ANNOTATION });
    assert.equal(annotated.concurrency, 5);
    assert.equal(annotated.image, undefined);
    const plain = effectiveProxyConfig(mesh, resources, { namespace: 'shop', labels: { app: 'api' }, annotations: {} });
    assert.equal(plain.concurrency, 40);
    assert.deepEqual(plain.proxyMetadata, { A: 'root', M: '1', R: '1' });
  });
  it('the oldest resource of a layer wins: creation time, then name (a file object, without one, counts as oldest)', () => {
    const created = (name: string, concurrency: number, at?: string, selector?: Record<string, string>): Config<'ProxyConfig'> =>
      proxyConfig('shop', name, { concurrency, ...(selector ? { selector: { matchLabels: selector } } : {}) }, at);
    const plain = { namespace: 'shop', labels: { app: 'web' }, annotations: {} };
    const newer = created('a-newer', 7, '2024-03-01T00:00:00Z');
    const older = created('z-older', 8, '2024-01-01T00:00:00Z');
    assert.equal(effectiveProxyConfig(mesh, source(newer, older), plain).concurrency, 8, 'namespace layer');
    assert.equal(effectiveProxyConfig(mesh, source(newer, created('z-file', 9)), plain).concurrency, 9, 'no creation time: oldest');
    const web = { app: 'web' };
    const selecting = source(created('a-web', 10, '2024-03-01T00:00:00Z', web), created('z-web', 11, '2024-01-01T00:00:00Z', web));
    assert.equal(effectiveProxyConfig(mesh, selecting, plain).concurrency, 11, 'workload layer');
  });
  it('another namespace gets the root layer over the mesh; no resources at all leaves the mesh defaultConfig', () => {
    assert.equal(effectiveProxyConfig(mesh, resources, { namespace: 'other', labels: {}, annotations: {} }).concurrency, 3);
    const none = effectiveProxyConfig(mesh, undefined, { namespace: 'shop', labels: { app: 'web' }, annotations: {} });
    assert.equal(none.concurrency, 2);
    assert.deepEqual(none.proxyMetadata, { A: 'mesh', M: '1' });
  });
  it('a negative concurrency is refused by validation, naming the field', () => {
    const r = validateObject(
      {
        apiVersion: 'networking.istio.io/v1beta1',
        kind: 'ProxyConfig',
        metadata: { name: 'x', namespace: 'shop' },
        spec: { concurrency: -1 },
      },
      { file: 'f.yaml' },
    );
    assert.ok(!r.ok);
    assert.ok(r.errors.some((e) => e.path === 'spec.concurrency' && e.message.includes('greater than or equal to 0')));
  });
});

describe('ProxyConfig at injection', () => {
  const TESTDATA = path.resolve(import.meta.dirname, '../../testdata/inject');
  const pod = (labels: Record<string, string>): JsonObject => {
    const p = JSON.parse(readFileSync(path.join(TESTDATA, 'reviews-pod.json'), 'utf8')) as JsonObject;
    const meta = p.metadata as JsonObject;
    meta.labels = { ...(meta.labels as JsonObject), ...labels };
    meta.namespace = 'shop';
    return p;
  };
  const config = (proxyConfigs?: ProxyConfigSource): InjectionConfig => {
    const { config: injector, values } = builtinInjector();
    return {
      injector,
      templates: new CompiledTemplates(injector, {}),
      values,
      mesh,
      revision: '',
      nativeSidecars: false,
      ...(proxyConfigs ? { proxyConfigs } : {}),
    };
  };
  const proxyOf = (injected: JsonObject): JsonObject => {
    const cs = (injected.spec as JsonObject).containers as JsonObject[];
    const c = cs.find((x) => x.name === 'istio-proxy');
    assert.ok(c);
    return c;
  };

  it('the selected workload gets concurrency 6 in PROXY_CONFIG, its env and the -distroless image', () => {
    const result = injectPod(pod({ app: 'web' }), 'shop', config(resources));
    assert.ok('patch' in result);
    const proxy = proxyOf(result.injected);
    const env = Object.fromEntries((proxy.env as JsonObject[]).map((e) => [String(e.name), e.value]));
    assert.equal(env.W, '1');
    assert.equal(env.R, '1');
    assert.equal(env.A, 'root');
    assert.match(String(env.PROXY_CONFIG), /"concurrency":6/);
    assert.match(String(env.PROXY_CONFIG), /"image":\{"imageType":"distroless"\}/);
    assert.match(String(proxy.image), /-distroless$/);
  });
  it('without ProxyConfig resources the same pod keeps the mesh defaultConfig (concurrency 2, default image)', () => {
    const result = injectPod(pod({ app: 'web' }), 'shop', config());
    assert.ok('patch' in result);
    const proxy = proxyOf(result.injected);
    const env = Object.fromEntries((proxy.env as JsonObject[]).map((e) => [String(e.name), e.value]));
    assert.match(String(env.PROXY_CONFIG), /"concurrency":2/);
    assert.equal(env.W, undefined);
    assert.doesNotMatch(String(proxy.image), /-distroless$/);
  });

  it('the /inject webhook handler resolves ProxyConfig resources from its source (as meshpilot discovery wires the store)', async () => {
    const handler = injectionHandler({
      injector: () => injectorSnapshot(undefined, 'builtin', {}),
      meshConfig: () => mesh,
      proxyConfigs: () => resources,
    });
    const object = pod({ app: 'web' });
    const res = await handler({
      uid: 'u1',
      kind: { group: '', version: 'v1', kind: 'Pod' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      namespace: 'shop',
      operation: 'CREATE',
      object,
    });
    assert.equal(res.allowed, true);
    const injected = applyJsonPatch(
      object,
      JSON.parse(Buffer.from(res.patch ?? '', 'base64').toString('utf8')) as JsonPatchOp[],
    ) as JsonObject;
    const proxy = proxyOf(injected);
    assert.match(String(proxy.image), /-distroless$/);
    const env = Object.fromEntries((proxy.env as JsonObject[]).map((e) => [String(e.name), e.value]));
    assert.match(String(env.PROXY_CONFIG), /"concurrency":6/);
  });
});
