/**
 * The agent's Wasm fetch against real servers: an HTTPS module server and an OCI registry (v2 API)
 * with a certificate from a test CA, ECDS configs as meshpilot's generator builds them from a
 * WasmPlugin, relayed through the agent's real ADS proxy to a gRPC client on its Unix socket.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { anyUnpack, type Any } from '@bufbuild/protobuf/wkt';
import * as grpc from '@grpc/grpc-js';
import type { Config } from '../../config/config.js';
import { validateObject } from '../../config/validation/index.js';
import { TypedExtensionConfigSchema } from '../../gen/envoy/config/core/v3/extension_pb.js';
import { RBACSchema } from '../../gen/envoy/extensions/filters/http/rbac/v3/rbac_pb.js';
import { WasmSchema, type Wasm } from '../../gen/envoy/extensions/filters/http/wasm/v3/wasm_pb.js';
import {
  DiscoveryRequestSchema,
  DiscoveryResponseSchema,
  type DiscoveryRequest,
  type DiscoveryResponse,
} from '../../gen/envoy/service/discovery/v3/discovery_pb.js';
import { wasmExtensionConfig, wasmResourceName } from '../../networking/extension/wasm-plugins.js';
import { createLogger } from '../../util/log.js';
import { TypeUrl } from '../../xds/type-urls.js';
import { adsTestDefinition, AdsTestClient, createTestCa, type TestCa } from '../test-support.js';
import { startXdsProxy } from '../xds-proxy.js';
import { wasmCache, type WasmCache } from './cache.js';
import { DEFAULT_ALLOW_STAT_PREFIX, DEFAULT_DENY_STAT_PREFIX, rewriteEcdsResponse } from './ecds-rewrite.js';
import { parseImageRef } from './fetch.js';

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
/** A minimal valid Wasm module (magic + version) with a marker in a custom section. */
const module = (marker: string): Buffer =>
  Buffer.concat([Buffer.from([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, 0, marker.length + 1, marker.length]), Buffer.from(marker)]);
const GOOD = module('good');
const IMAGE_WASM = module('image');

/** A one-file ustar archive (what `docker build` puts in a layer). */
function tarOf(name: string, data: Buffer): Buffer {
  const h = Buffer.alloc(512);
  h.write(name, 0);
  h.write('0000644\0', 100);
  h.write('0000000\0', 108);
  h.write('0000000\0', 116);
  h.write(data.length.toString(8).padStart(11, '0') + '\0', 124);
  h.write('00000000000\0', 136);
  h.write('        ', 148);
  h.write('0', 156);
  h.write('ustar\0' + '00', 257);
  let sum = 0;
  for (const b of h) sum += b;
  h.write(sum.toString(8).padStart(6, '0') + '\0 ', 148);
  return Buffer.concat([h, data, Buffer.alloc((512 - (data.length % 512)) % 512), Buffer.alloc(1024)]);
}

interface Registry {
  readonly blobs: Map<string, Buffer>;
  readonly manifests: Map<string, Buffer>;
}

function image(reg: Registry, repo: string, tag: string, layer: Buffer, mediaType: string): string {
  const digest = `sha256:${sha(layer)}`;
  reg.blobs.set(`${repo}@${digest}`, layer);
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: 'sha256:00', size: 2 },
      layers: [{ mediaType, digest, size: layer.length }],
    }),
  );
  reg.manifests.set(`${repo}:${tag}`, manifest);
  return sha(manifest);
}

function plugin(name: string, spec: Record<string, unknown>): Config<'WasmPlugin'> {
  const r = validateObject(
    { apiVersion: 'extensions.istio.io/v1alpha1', kind: 'WasmPlugin', metadata: { name, namespace: 'shop' }, spec },
    { file: 'test' },
  );
  if (!r.ok) throw new Error(JSON.stringify(r.errors));
  return r.value as Config<'WasmPlugin'>;
}

const ecdsResponse = (...plugins: Config<'WasmPlugin'>[]): Buffer =>
  Buffer.from(
    toBinary(
      DiscoveryResponseSchema,
      create(DiscoveryResponseSchema, {
        typeUrl: TypeUrl.ExtensionConfiguration,
        versionInfo: 'v1',
        nonce: 'n1',
        resources: plugins.map((p) => ({
          typeUrl: `type.googleapis.com/${TypedExtensionConfigSchema.typeName}`,
          value: toBinary(TypedExtensionConfigSchema, wasmExtensionConfig(p)),
        })),
      }),
    ),
  );

/** The extension configs of a (rewritten) response: Wasm or RBAC, by name. */
function decoded(bytes: Buffer): Map<string, { wasm?: Wasm; rbac?: ReturnType<typeof anyUnpack<typeof RBACSchema>> }> {
  const out = new Map<string, { wasm?: Wasm; rbac?: ReturnType<typeof anyUnpack<typeof RBACSchema>> }>();
  for (const a of fromBinary(DiscoveryResponseSchema, bytes).resources) {
    const ec = anyUnpack(a, TypedExtensionConfigSchema)!;
    const tc = ec.typedConfig as Any;
    const wasm = anyUnpack(tc, WasmSchema);
    const rbac = anyUnpack(tc, RBACSchema);
    out.set(ec.name, wasm ? { wasm } : { rbac });
  }
  return out;
}

function localFile(w: Wasm | undefined): string | undefined {
  const vm = w?.config?.vm;
  const code = vm?.case === 'vmConfig' ? vm.value.code?.specifier : undefined;
  return code?.case === 'local' && code.value.specifier.case === 'filename' ? code.value.specifier.value : undefined;
}

describe('agent Wasm fetch (HTTPS with a test CA, OCI registry)', () => {
  let dir: string;
  let ca: TestCa;
  let server: https.Server;
  let base: string;
  let cache: WasmCache;
  const hits = new Map<string, number>();
  const reg: Registry = { blobs: new Map(), manifests: new Map() };
  const logs: string[] = [];
  const log = createLogger({ level: 'debug', sink: (l) => logs.push(l) });
  let artifactDigest = '';
  let dockerDigest = '';
  let privateDigest = '';

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'agent-wasm-'));
    ca = await createTestCa({ identity: 'spiffe://cluster.local/ns/x/sa/y' });
    const cert = await ca.issue(['localhost']);
    artifactDigest = image(reg, 'plugins/artifact', '1.0', IMAGE_WASM, 'application/vnd.module.wasm.content.layer.v1+wasm');
    dockerDigest = image(
      reg,
      'plugins/docker',
      '2.0',
      gzipSync(tarOf('plugin.wasm', IMAGE_WASM)),
      'application/vnd.docker.image.rootfs.diff.tar.gzip',
    );
    privateDigest = image(reg, 'private/x', '1.0', IMAGE_WASM, 'application/vnd.module.wasm.content.layer.v1+wasm');
    server = https.createServer({ key: cert.privateKeyPem, cert: cert.certChainPem }, (req, res) => {
      const url = req.url ?? '';
      hits.set(url, (hits.get(url) ?? 0) + 1);
      // The distribution token flow, as Docker Hub or ghcr.io: private/* needs a bearer token from /token.
      if (url.startsWith('/token?')) {
        const q = new URL(url, 'https://x').searchParams;
        const ok = q.get('service') === 'test-registry' && q.get('scope') === 'repository:private/x:pull';
        return void res
          .writeHead(ok ? 200 : 400, { 'content-type': 'application/json' })
          .end(JSON.stringify(ok ? { token: 'granted' } : {}));
      }
      if (url.startsWith('/v2/private/') && req.headers.authorization !== 'Bearer granted') {
        return void res
          .writeHead(401, {
            'www-authenticate': `Bearer realm="https://${base}/token",service="test-registry",scope="repository:private/x:pull"`,
          })
          .end();
      }
      const m = /^\/v2\/(.+)\/(manifests|blobs)\/(.+)$/.exec(url);
      const body =
        url === '/good.wasm'
          ? GOOD
          : m
            ? m[2] === 'manifests'
              ? reg.manifests.get(`${m[1]}:${m[3]}`)
              : reg.blobs.get(`${m[1]}@${m[3]}`)
            : undefined;
      if (!body) return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, 'localhost', resolve));
    base = `localhost:${(server.address() as AddressInfo).port}`;
    cache = wasmCache({ dir: path.join(dir, 'cache'), fetchOptions: { timeoutMs: 5000, caPem: ca.rootPem } });
  });
  after(async () => {
    server.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('a good checksum: the config points at the cached module and loses the ISTIO_META_ env', async () => {
    const p = plugin('good', { url: `https://${base}/good.wasm`, sha256: sha(GOOD), vmConfig: { env: [{ name: 'MODE', value: 'x' }] } });
    const out = decoded(await rewriteEcdsResponse(ecdsResponse(p), false, cache, log));
    const w = out.get(wasmResourceName(p))?.wasm;
    const file = localFile(w);
    assert.ok(file?.startsWith(path.join(dir, 'cache')), `local file in the cache dir, got ${file}`);
    assert.deepEqual(await readFile(file ?? ''), GOOD);
    const vm = w?.config?.vm.case === 'vmConfig' ? w.config.vm.value : undefined;
    assert.deepEqual(vm?.environmentVariables?.keyValues, { MODE: 'x' });
    assert.equal(vm?.runtime, 'envoy.wasm.runtime.v8');
    assert.equal(hits.get('/good.wasm'), 1);
  });

  it('the same URL and checksum again is a cache hit (no download)', async () => {
    const before = cache.fetches();
    const p = plugin('good-again', { url: `https://${base}/good.wasm`, sha256: sha(GOOD) });
    const file = localFile(decoded(await rewriteEcdsResponse(ecdsResponse(p), false, cache, log)).get(wasmResourceName(p))?.wasm);
    assert.ok(file);
    assert.equal(cache.fetches(), before);
    assert.equal(hits.get('/good.wasm'), 1);
  });

  it('a bad checksum with FAIL_CLOSE: a deny-all RBAC filter under the plugin name, the reason logged', async () => {
    const p = plugin('bad-close', { url: `https://${base}/good.wasm`, sha256: 'a'.repeat(64) });
    const out = decoded(await rewriteEcdsResponse(ecdsResponse(p), false, cache, log));
    const rbac = out.get(wasmResourceName(p))?.rbac;
    assert.ok(rbac, 'replaced by RBAC');
    assert.ok(rbac.rules, 'deny-all: rules present and empty');
    assert.equal(rbac.rules.policies && Object.keys(rbac.rules.policies).length, 0);
    assert.equal(rbac.rulesStatPrefix, DEFAULT_DENY_STAT_PREFIX);
    assert.ok(
      logs.some((l) => l.includes('does not match') && l.includes('FAIL_CLOSE') && l.includes('bad-close')),
      logs.join('\n'),
    );
  });

  it('a bad checksum with FAIL_OPEN: an allow-all RBAC filter (no rules)', async () => {
    const p = plugin('bad-open', { url: `https://${base}/good.wasm`, sha256: 'b'.repeat(64), failStrategy: 'FAIL_OPEN' });
    const rbac = decoded(await rewriteEcdsResponse(ecdsResponse(p), false, cache, log)).get(wasmResourceName(p))?.rbac;
    assert.equal(rbac?.rules, undefined);
    assert.equal(rbac?.rulesStatPrefix, DEFAULT_ALLOW_STAT_PREFIX);
  });

  it('an unreachable module and an untrusted server certificate follow the fail strategy', async () => {
    const closed = plugin('unreachable', { url: 'https://127.0.0.1:1/x.wasm' });
    const noCa = wasmCache({ dir: path.join(dir, 'no-ca'), fetchOptions: { timeoutMs: 5000 } });
    const untrusted = plugin('untrusted', { url: `https://${base}/good.wasm`, failStrategy: 'FAIL_OPEN' });
    const a = decoded(await rewriteEcdsResponse(ecdsResponse(closed), false, cache, log)).get(wasmResourceName(closed));
    const b = decoded(await rewriteEcdsResponse(ecdsResponse(untrusted), false, noCa, log)).get(wasmResourceName(untrusted));
    assert.equal(a?.rbac?.rulesStatPrefix, DEFAULT_DENY_STAT_PREFIX);
    assert.equal(b?.rbac?.rulesStatPrefix, DEFAULT_ALLOW_STAT_PREFIX);
    assert.ok(
      logs.some((l) => l.includes('untrusted') && /certificate/i.test(l)),
      'TLS verification failure logged',
    );
  });

  it('OCI: a Wasm artifact, a Docker image layer (plugin.wasm in a tar.gz) and a token-protected repository, pinned by manifest digest', async () => {
    const art = plugin('oci-artifact', { url: `oci://${base}/plugins/artifact:1.0`, sha256: artifactDigest });
    const dock = plugin('oci-docker', { url: `${base}/plugins/docker:2.0`, sha256: dockerDigest });
    const out = decoded(await rewriteEcdsResponse(ecdsResponse(art, dock), false, cache, log));
    for (const p of [art, dock]) {
      const file = localFile(out.get(wasmResourceName(p))?.wasm);
      assert.ok(file, `${p.meta.name} rewritten to a file`);
      assert.deepEqual(await readFile(file), IMAGE_WASM);
    }
    const priv = plugin('oci-private', { url: `oci://${base}/private/x:1.0`, sha256: privateDigest });
    assert.deepEqual(
      await readFile(
        localFile(decoded(await rewriteEcdsResponse(ecdsResponse(priv), false, cache, log)).get(wasmResourceName(priv))?.wasm) ?? '',
      ),
      IMAGE_WASM,
      'pulled through the bearer-token challenge',
    );
    const wrong = plugin('oci-wrong', { url: `oci://${base}/plugins/artifact:1.0`, sha256: 'c'.repeat(64) });
    assert.ok(decoded(await rewriteEcdsResponse(ecdsResponse(wrong), false, cache, log)).get(wasmResourceName(wrong))?.rbac);
    assert.deepEqual(parseImageRef('oci://r.io:5000/a/b@sha256:ff'), { host: 'r.io:5000', repo: 'a/b', reference: 'sha256:ff' });
  });

  it('through the agent ADS proxy: the client receives the rewritten ECDS from the control plane', async () => {
    const p = plugin('relayed', { url: `https://${base}/good.wasm`, sha256: sha(GOOD) });
    const up = new grpc.Server();
    up.addService(adsTestDefinition, {
      StreamAggregatedResources: (call: grpc.ServerDuplexStream<DiscoveryRequest, DiscoveryResponse>) => {
        call.on('data', () => call.write(fromBinary(DiscoveryResponseSchema, ecdsResponse(p))));
        call.on('end', () => call.end());
      },
      DeltaAggregatedResources: (call: grpc.ServerDuplexStream<unknown, unknown>) => call.end(),
    });
    const port = await new Promise<number>((resolve, reject) =>
      up.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, n) => (e ? reject(e) : resolve(n))),
    );
    const socket = path.join(dir, 'XDS');
    const proxy = await startXdsProxy({
      socketPath: socket,
      upstreamAddr: `127.0.0.1:${port}`,
      transport: 'plaintext',
      serverName: 'istiod',
      log,
      workloadSecret: () => Promise.reject(new Error('plaintext')),
      rewriteResponse: (b, delta) => rewriteEcdsResponse(b, delta, cache, log),
    });
    const client = new AdsTestClient(`unix:${socket}`, grpc.credentials.createInsecure());
    try {
      const resp = await new Promise<DiscoveryResponse>((resolve, reject) => {
        const call = (
          client as unknown as { StreamAggregatedResources(): grpc.ClientDuplexStream<unknown, DiscoveryResponse> }
        ).StreamAggregatedResources();
        call.on('data', (r: DiscoveryResponse) => {
          resolve(r);
          call.cancel();
        });
        call.on('error', (e: grpc.ServiceError) => (e.code === grpc.status.CANCELLED ? undefined : reject(e)));
        call.write(create(DiscoveryRequestSchema, { typeUrl: TypeUrl.ExtensionConfiguration, resourceNames: [wasmResourceName(p)] }));
      });
      const file = localFile(decoded(Buffer.from(toBinary(DiscoveryResponseSchema, resp))).get(wasmResourceName(p))?.wasm);
      assert.ok(file?.startsWith(path.join(dir, 'cache')));
    } finally {
      client.close();
      await proxy.stop();
      up.forceShutdown();
    }
  });
});
