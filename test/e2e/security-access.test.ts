/**
 * Who may read debug state, and the TLS the secure ports accept. One meshpilot
 * with its plaintext servers on 0.0.0.0 (so the same ports are reached from loopback and from this
 * host's non-loopback address), its CA on 15012 and webhooks on 15017.
 *
 * - HTTP debug (8080 and 15014), as istiod's allowAuthenticatedOrLocalhost: loopback gets all;
 *   a remote caller without a valid token 401; istio-system identity all; another namespace only
 *   /debug/config_dump of its own proxies (403 / 404 otherwise); /debug/preview the same.
 * - xDS debug types: 15012 per verified identity (istio-system all, a namespace its own proxies);
 *   15010 loopback peers only (istiod: never on 15010).
 * - TLS on 15012 and 15017: 1.1 and weak suites refused, 1.2 (Go's ECDHE suites) and 1.3 accepted.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { cp, writeFile } from 'node:fs/promises';
import { networkInterfaces } from 'node:os';
import path from 'node:path';
import * as tls from 'node:tls';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import * as grpc from '@grpc/grpc-js';
import { controlPlaneChannel } from '../../src/agent/ca-client.js';
import { ClientConfigSchema } from '../../src/gen/envoy/service/status/v3/csds_pb.js';
import {
  DiscoveryRequestSchema,
  DiscoveryResponseSchema,
  type DiscoveryRequest,
  type DiscoveryResponse,
} from '../../src/gen/envoy/service/discovery/v3/discovery_pb.js';
import { CONFIG_DUMP_TYPE, SYNCZ_TYPE, xdsDebugRequest } from '../../src/meshctl/proxy/xds-debug-client.js';
import { startJwtCaMeshpilot, type JwtCaMeshpilot } from '../support/jwt-ca-meshpilot.js';
import { freePorts } from '../support/ports.js';
import { AdsStream } from '../support/raw-ads-client.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { TYPE } from '../support/xds-resources.js';
import { BOOKINFO_DIR, BOOKINFO_PROXIES } from '../scenarios/bookinfo-fixture.js';

const run = promisify(execFile);
const GATEWAY = BOOKINFO_PROXIES['ingress-gateway']!;
const PRODUCTPAGE = BOOKINFO_PROXIES.productpage!;
const ADS_PATH = '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources';

/** This host's first non-loopback IPv4 address: the source of "remote" requests. */
const remoteIp = Object.values(networkInterfaces())
  .flat()
  .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;
const skipRemote = remoteIp === undefined ? 'this host has no non-loopback IPv4 address to call from' : false;

let dir: TempDir;
let ca: JwtCaMeshpilot;
let webhookPort: number;
const streams: AdsStream[] = [];
const port = (addr: string): string => addr.slice(addr.lastIndexOf(':') + 1);
const remote = (addr: string): string => `${remoteIp ?? '127.0.0.1'}:${port(addr)}`;

async function get(
  addr: string,
  p: string,
  init: { token?: string; method?: string; body?: string } = {},
): Promise<{ status: number; body: string }> {
  const res = await fetch(`http://${addr}${p}`, {
    method: init.method ?? 'GET',
    ...(init.body !== undefined ? { body: init.body } : {}),
    headers: init.token !== undefined ? { authorization: `Bearer ${init.token}` } : {},
  });
  return { status: res.status, body: await res.text() };
}

/** One request on the TLS port as `node`; resolves with the first answer. */
function overTls(
  node: { id: string; metadata: Record<string, string> },
  token: string,
  typeUrl: string,
  names: string[],
): Promise<DiscoveryResponse> {
  const { credentials, options } = controlPlaneChannel({ rootCertPem: ca.rootPem, serverName: 'istiod.istio-system.svc' });
  const client = new grpc.Client(ca.secureAddr, credentials, options);
  const md = new grpc.Metadata();
  md.set('authorization', `Bearer ${token}`);
  const call = client.makeBidiStreamRequest<DiscoveryRequest, DiscoveryResponse>(
    ADS_PATH,
    (r) => Buffer.from(toBinary(DiscoveryRequestSchema, r)),
    (b) => fromBinary(DiscoveryResponseSchema, b),
    md,
  );
  return new Promise<DiscoveryResponse>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${typeUrl} answer`)), 10_000);
    const done = (): void => {
      clearTimeout(timer);
      call.on('error', () => undefined);
      call.cancel();
      client.close();
    };
    call.on('data', (r: DiscoveryResponse) => {
      done();
      resolve(r);
    });
    call.on('error', (e: grpc.ServiceError) => {
      done();
      reject(new Error(`${grpc.status[e.code]}: ${e.details}`));
    });
    call.write(create(DiscoveryRequestSchema, { typeUrl, resourceNames: names, node }));
  });
}

/** A debug request for a node in `namespace` (meshctl's client always says istio-system). */
const debugOverTls = (namespace: string, token: string, typeUrl: string, names: string[]): Promise<DiscoveryResponse> =>
  overTls(
    { id: `sidecar~127.0.0.1~debugger.${namespace}~${namespace}.svc.cluster.local`, metadata: { NAMESPACE: namespace } },
    token,
    typeUrl,
    names,
  );

const synczNodes = (r: DiscoveryResponse): string[] =>
  r.resources
    .map((a) => anyUnpack(a, ClientConfigSchema)?.node?.id ?? '?')
    .filter((id) => !id.includes('debugger') && !id.includes('meshctl'))
    .sort();

before(async () => {
  dir = tempDir('meshpilot-security-access-');
  const configDir = path.join(dir.path, 'config');
  await cp(path.join(BOOKINFO_DIR, 'config'), configDir, { recursive: true });
  [webhookPort] = (await freePorts(1)) as [number];
  ca = await startJwtCaMeshpilot(configDir, path.join(dir.path, 'ca'), {
    listenHost: '0.0.0.0',
    args: ['--httpsAddr', `127.0.0.1:${webhookPort}`],
  });
  for (const n of [GATEWAY, PRODUCTPAGE]) {
    const ns = n.id.split('~')[2]!.split('.')[1]!;
    const s = AdsStream.open(ca.mp.grpcAddr, {
      node: { id: n.id, metadata: { NAMESPACE: ns, LABELS: n.labels ?? {}, CLUSTER_ID: 'Kubernetes' } },
    });
    streams.push(s);
    s.subscribe(TYPE.CDS, []);
    s.ack((await s.next(TYPE.CDS)).resp);
  }
});

after(async () => {
  for (const s of streams) s.close();
  await ca?.mp.stop();
  await dir?.remove();
});

describe('HTTP debug endpoints (8080 --httpAddr, 15014 --monitoringAddr)', () => {
  it('answer every loopback caller', async () => {
    for (const addr of [ca.mp.httpAddr, ca.mp.monitoringAddr]) {
      assert.equal((await get(addr, '/debug/syncz')).status, 200);
      assert.equal(
        (await get(addr, '/debug/preview', { method: 'POST', body: 'kind: Nothing' })).status,
        400,
        'preview reached its parser',
      );
    }
  });

  it(
    'refuse a remote caller without a valid token (401), also for POST /debug/preview; /ready and /metrics stay open',
    { skip: skipRemote },
    async () => {
      const forged = await ca.forgedToken('istio-system', 'istiod');
      for (const addr of [ca.mp.httpAddr, ca.mp.monitoringAddr].map(remote)) {
        assert.equal((await get(addr, '/debug/syncz')).status, 401);
        assert.equal((await get(addr, '/debug/configz', { token: forged })).status, 401);
        assert.equal((await get(addr, '/debug/preview', { method: 'POST', body: 'kind: Nothing' })).status, 401);
        assert.equal((await get(addr, '/ready')).status, 200);
      }
      assert.equal((await get(remote(ca.mp.monitoringAddr), '/metrics')).status, 200);
      await ca.mp.waitForLog((l) => l.json?.msg === 'debug request refused' && l.json.status === 401, {
        description: 'the refusal in the log',
      });
    },
  );

  it('give an istio-system identity everything, another namespace only config_dump of its own proxies', { skip: skipRemote }, async () => {
    const system = await ca.token('istio-system', 'istiod');
    const bookinfo = await ca.token('bookinfo', 'productpage');
    for (const addr of [ca.mp.httpAddr, ca.mp.monitoringAddr].map(remote)) {
      for (const p of ['/debug/syncz', '/debug/configz', `/debug/config_dump?proxyID=${GATEWAY.id}`])
        assert.equal((await get(addr, p, { token: system })).status, 200, p);
      assert.equal(
        (await get(addr, '/debug/preview', { method: 'POST', body: 'kind: Nothing', token: system })).status,
        400,
        'preview reached its parser',
      );
      assert.equal((await get(addr, `/debug/config_dump?proxyID=${PRODUCTPAGE.id}`, { token: bookinfo })).status, 200);
      const other = await get(addr, `/debug/config_dump?proxyID=${GATEWAY.id}`, { token: bookinfo });
      assert.equal(other.status, 404, "another namespace's proxy looks unknown (istiod)");
      for (const p of ['/debug/syncz', '/debug/configz', '/debug/adsz'])
        assert.equal((await get(addr, p, { token: bookinfo })).status, 403, p);
      assert.equal((await get(addr, '/debug/preview', { method: 'POST', body: 'kind: Nothing', token: bookinfo })).status, 403);
    }
  });
});

describe('xDS debug types', () => {
  it('15012: an istio-system identity sees every proxy; a bookinfo identity only bookinfo proxies', async () => {
    const all = await debugOverTls('istio-system', await ca.token('istio-system', 'istiod'), SYNCZ_TYPE, []);
    assert.deepEqual(synczNodes(all), [GATEWAY.id, PRODUCTPAGE.id].sort());
    const bookinfo = await ca.token('bookinfo', 'productpage');
    assert.deepEqual(synczNodes(await debugOverTls('bookinfo', bookinfo, SYNCZ_TYPE, [])), [PRODUCTPAGE.id]);
    assert.ok((await debugOverTls('bookinfo', bookinfo, CONFIG_DUMP_TYPE, [PRODUCTPAGE.id])).resources.length > 0);
    assert.equal((await debugOverTls('bookinfo', bookinfo, CONFIG_DUMP_TYPE, [GATEWAY.id])).resources.length, 0);
    await assert.rejects(debugOverTls('bookinfo', await ca.forgedToken('bookinfo', 'productpage'), SYNCZ_TYPE, []), /UNAUTHENTICATED/);
  });

  it('15010 (plaintext): loopback peers only', async () => {
    assert.ok(synczNodes(await xdsDebugRequest({ address: ca.mp.grpcAddr }, SYNCZ_TYPE, [])).length === 2);
    if (skipRemote) return;
    const r = await xdsDebugRequest({ address: remote(ca.mp.grpcAddr) }, SYNCZ_TYPE, []);
    assert.equal(r.resources.length, 0, 'a remote plaintext peer gets no debug data');
    assert.equal((await xdsDebugRequest({ address: remote(ca.mp.grpcAddr) }, CONFIG_DUMP_TYPE, [GATEWAY.id])).resources.length, 0);
    await ca.mp.waitForLog((l) => l.json?.msg === 'proxy is not authorized to receive debug info', {
      description: 'the refusal in the log',
    });
  });
});

describe('gateway credentials over SDS (istiod: only to authenticated proxies)', () => {
  const SDS = 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret';
  const gatewayNode = { id: GATEWAY.id, metadata: { NAMESPACE: 'istio-system', CLUSTER_ID: 'Kubernetes' } };
  const secretsFrom = async (s: AdsStream): Promise<number> => {
    s.subscribe(SDS, ['kubernetes://bookinfo-cert']);
    return (await s.next(SDS)).resp.resources.length;
  };

  it("15012 with the gateway's identity and 15010 from loopback get the credential; a remote plaintext peer does not", async () => {
    const tlsAnswer = await overTls(gatewayNode, await ca.token('istio-system', 'istio-ingressgateway-service-account'), SDS, [
      'kubernetes://bookinfo-cert',
    ]);
    assert.equal(tlsAnswer.resources.length, 1);
    const local = AdsStream.open(ca.mp.grpcAddr, { node: gatewayNode });
    streams.push(local);
    assert.equal(await secretsFrom(local), 1);
    if (skipRemote) return;
    const far = AdsStream.open(remote(ca.mp.grpcAddr), { node: gatewayNode });
    streams.push(far);
    assert.equal(await secretsFrom(far), 0, 'a remote plaintext peer claiming to be the gateway got its key');
    await ca.mp.waitForLog((l) => String(l.json?.msg).startsWith('proxy is not authorized to receive credentials'), {
      description: 'the refusal in the log',
    });
  });
});

/** A TLS handshake with the given client limits: the negotiated version and suite, or the error. */
function handshake(
  addr: string,
  o: { min: tls.SecureVersion; max: tls.SecureVersion; ciphers?: string; alpn?: string[] },
): Promise<{ ok: true; version: string; cipher: string } | { ok: false; error: string }> {
  const [host, p] = [addr.slice(0, addr.lastIndexOf(':')), Number(port(addr))];
  return new Promise((resolve) => {
    const s = tls.connect({
      host,
      port: p,
      servername: 'istiod.istio-system.svc',
      rejectUnauthorized: false,
      minVersion: o.min,
      maxVersion: o.max,
      // SECLEVEL=0 so this client may offer what the server should refuse (OpenSSL 3 drops TLS 1.1 by default).
      ciphers: `${o.ciphers ?? 'DEFAULT'}@SECLEVEL=0`,
      ...(o.alpn ? { ALPNProtocols: o.alpn } : {}),
    });
    s.once('secureConnect', () => {
      resolve({ ok: true, version: s.getProtocol() ?? '?', cipher: s.getCipher().standardName });
      s.destroy();
    });
    s.once('error', (e) => resolve({ ok: false, error: e.message }));
  });
}

/** Suites Go leaves out of its defaults (CBC-SHA256, RSA key exchange, DHE) that Node's defaults accept. */
const WEAK = 'ECDHE-ECDSA-AES128-SHA256:ECDHE-RSA-AES128-SHA256:AES128-SHA:AES128-GCM-SHA256:DHE-RSA-AES128-GCM-SHA256';

describe("TLS on 15012 (gRPC) and 15017 (webhooks): Istio's defaults", () => {
  for (const [name, target] of [
    ['15012', () => ca.secureAddr],
    ['15017', () => `127.0.0.1:${webhookPort}`],
  ] as const) {
    it(`${name}: TLS 1.1 and weak suites refused; 1.2 with ECDHE-GCM and 1.3 accepted`, async () => {
      const alpn = name === '15012' ? ['h2'] : undefined;
      const v11 = await handshake(target(), { min: 'TLSv1.1', max: 'TLSv1.1', ...(alpn ? { alpn } : {}) });
      assert.ok(!v11.ok, `TLS 1.1 was accepted: ${JSON.stringify(v11)}`);
      const weak = await handshake(target(), { min: 'TLSv1.2', max: 'TLSv1.2', ciphers: WEAK, ...(alpn ? { alpn } : {}) });
      assert.ok(!weak.ok, `a weak suite was accepted: ${JSON.stringify(weak)}`);
      const v12 = await handshake(target(), { min: 'TLSv1.2', max: 'TLSv1.2', ...(alpn ? { alpn } : {}) });
      assert.ok(
        v12.ok && v12.version === 'TLSv1.2' && /^TLS_ECDHE_(ECDSA|RSA)_WITH_AES_(128|256)_GCM_SHA(256|384)$/.test(v12.cipher),
        JSON.stringify(v12),
      );
      const v13 = await handshake(target(), { min: 'TLSv1.3', max: 'TLSv1.3', ...(alpn ? { alpn } : {}) });
      assert.ok(v13.ok && v13.version === 'TLSv1.3', JSON.stringify(v13));
    });
  }

  it('openssl s_client agrees on 15012: -tls1_1 fails, -tls1_2 with a weak suite fails, -tls1_2 succeeds', async () => {
    // stdin from /dev/null: s_client exits once the handshake is done (0) or failed (1).
    const sclient = (args: string[]): Promise<boolean> =>
      new Promise((resolve) => {
        const c = spawn('openssl', ['s_client', '-connect', ca.secureAddr, '-servername', 'istiod.istio-system.svc', ...args], {
          stdio: ['ignore', 'ignore', 'ignore'],
          timeout: 10_000,
        });
        c.once('exit', (code) => resolve(code === 0));
        c.once('error', () => resolve(false));
      });
    assert.equal(await sclient(['-tls1_1', '-cipher', 'DEFAULT@SECLEVEL=0']), false);
    assert.equal(await sclient(['-tls1_2', '-cipher', `${WEAK}@SECLEVEL=0`]), false);
    assert.equal(await sclient(['-tls1_2']), true);
  });

  it("the weak suites are ones Node's own defaults would accept (so the refusal above is our setting)", async () => {
    // A plain Node TLS server with an ECDSA certificate, as meshpilot's CA issues by default.
    const key = (await run('openssl', ['ecparam', '-name', 'prime256v1', '-genkey', '-noout'])).stdout;
    const keyFile = path.join(dir.path, 'control-key.pem');
    await writeFile(keyFile, key);
    const cert = (await run('openssl', ['req', '-x509', '-key', keyFile, '-subj', '/CN=control', '-days', '1'])).stdout;
    const server = tls.createServer({ key, cert });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const r = await handshake(`127.0.0.1:${(server.address() as { port: number }).port}`, {
        min: 'TLSv1.2',
        max: 'TLSv1.2',
        ciphers: WEAK,
      });
      assert.ok(r.ok && r.cipher === 'TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256', JSON.stringify(r));
    } finally {
      server.close();
    }
  });
});
