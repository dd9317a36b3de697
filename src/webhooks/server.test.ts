import assert from 'node:assert/strict';
import { request, type RequestOptions } from 'node:https';
import { connect as netConnect } from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { IstioCa } from '../security/ca/istio-ca.js';
import { captureLogs, tempDir, type TempDir } from '../security/test-helpers.js';
import type { AdmissionRequest } from './admission.js';
import { WebhookServer, type ServingIdentity } from './server.js';
import { validationHandler } from './validation.js';

const logs = captureLogs();
const SNI = 'istiod.istio-system.svc';
let dir: TempDir;
let ca: IstioCa;
let server: WebhookServer;
let bare: WebhookServer;
const injected: AdmissionRequest[] = [];
const paths: string[] = [];

interface Reply {
  readonly status: number;
  readonly body: string;
  readonly json: Record<string, unknown> | undefined;
}

async function newCa(name: string): Promise<IstioCa> {
  return IstioCa.create({
    trustDomain: 'cluster.local',
    caDir: path.join(dir.path, name),
    caCertsDir: path.join(dir.path, 'none'),
    logger: logs.logger,
  });
}

async function identity(from: IstioCa): Promise<ServingIdentity> {
  return from.generateKeyCert([SNI, '127.0.0.1'], 3_600_000);
}

/** One HTTPS request over a fresh connection, verified against `trust` (the CA's bundle by default). */
function call(
  s: WebhookServer,
  opts: { path?: string; method?: string; body?: string | Buffer; contentType?: string | null; trust?: string; chunked?: boolean },
): Promise<Reply> {
  const headers: Record<string, string> = {};
  if (opts.contentType !== null) headers['content-type'] = opts.contentType ?? 'application/json';
  const ro: RequestOptions = {
    host: '127.0.0.1',
    port: s.port,
    path: opts.path ?? '/validate',
    method: opts.method ?? 'POST',
    servername: SNI,
    ca: opts.trust ?? ca.trustBundlePem(),
    agent: false,
    headers,
  };
  return new Promise((resolve, reject) => {
    const req = request(ro, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        let json: Record<string, unknown> | undefined;
        try {
          json = JSON.parse(body) as Record<string, unknown>;
        } catch {
          json = undefined;
        }
        resolve({ status: res.statusCode ?? 0, body, json });
      });
    });
    req.on('error', reject);
    if (opts.body !== undefined) {
      if (opts.chunked) {
        // No Content-Length: the server has to count while reading.
        const b = Buffer.from(opts.body);
        const step = 256 * 1024;
        for (let i = 0; i < b.length; i += step) req.write(b.subarray(i, i + step));
      } else req.write(opts.body);
    }
    req.end();
  });
}

function review(apiVersion: string, req: Record<string, unknown>): string {
  return JSON.stringify({ apiVersion, kind: 'AdmissionReview', request: req });
}

const vsRequest = (uid: string, spec: Record<string, unknown>): Record<string, unknown> => ({
  uid,
  kind: { group: 'networking.istio.io', version: 'v1', kind: 'VirtualService' },
  resource: { group: 'networking.istio.io', version: 'v1', resource: 'virtualservices' },
  namespace: 'shop',
  name: 'web',
  operation: 'CREATE',
  object: { apiVersion: 'networking.istio.io/v1', kind: 'VirtualService', metadata: { name: 'web', namespace: 'shop' }, spec },
});

const badRegex = { hosts: ['web'], http: [{ match: [{ uri: { regex: '(' } }], route: [{ destination: { host: 'web' } }] }] };
const good = { hosts: ['web'], http: [{ route: [{ destination: { host: 'web' } }] }] };

function responseOf(r: Reply): Record<string, unknown> {
  assert.equal(r.status, 200, r.body);
  const resp = r.json?.response;
  assert.ok(resp && typeof resp === 'object', `no response in ${r.body}`);
  return resp as Record<string, unknown>;
}

before(async () => {
  dir = await tempDir();
  ca = await newCa('ca');
  server = await WebhookServer.start({
    host: '127.0.0.1',
    port: 0,
    identity: await identity(ca),
    logger: logs.logger,
    handlers: {
      validate: validationHandler({ logger: logs.logger }),
      inject: (req, path) => {
        injected.push(req);
        paths.push(path);
        if (req.name === 'explode') throw new Error('template exploded');
        return {
          uid: 'not-the-request-uid',
          allowed: true,
          patch: Buffer.from('[{"op":"add","path":"/metadata/labels/x","value":"y"}]').toString('base64'),
          patchType: 'JSONPatch',
        };
      },
    },
  });
  bare = await WebhookServer.start({
    host: '127.0.0.1',
    port: 0,
    identity: await identity(ca),
    logger: logs.logger,
    handlers: { validate: validationHandler({ logger: logs.logger }), injectUnavailable: 'it needs a cluster' },
  });
});

after(async () => {
  await server.close();
  await bare.close();
  await dir.remove();
});

describe('webhook server: AdmissionReview over real TLS', () => {
  it("denies an invalid VirtualService with istiod's message shape, echoing uid and apiVersion (v1)", async () => {
    const r = await call(server, { body: review('admission.k8s.io/v1', vsRequest('uid-1', badRegex)) });
    assert.equal(r.json?.apiVersion, 'admission.k8s.io/v1');
    assert.equal(r.json?.kind, 'AdmissionReview');
    const resp = responseOf(r);
    assert.equal(resp.uid, 'uid-1');
    assert.equal(resp.allowed, false);
    const message = (resp.status as { message?: string }).message ?? '';
    assert.match(message, /^configuration is invalid: spec\.http\[0\]\.match\[0\]\.uri\.regex: error parsing regexp: missing closing \)/);
  });

  it('answers a v1beta1 review in v1beta1; a valid object is allowed', async () => {
    const r = await call(server, { body: review('admission.k8s.io/v1beta1', vsRequest('uid-2', good)) });
    assert.equal(r.json?.apiVersion, 'admission.k8s.io/v1beta1');
    const resp = responseOf(r);
    assert.deepEqual(resp, { uid: 'uid-2', allowed: true });
  });

  it("serves istiod's aliases /validate/ and /inject/…; /inject hands over the patch with the request uid", async () => {
    assert.equal(
      responseOf(await call(server, { path: '/validate/', body: review('admission.k8s.io/v1', vsRequest('uid-3', badRegex)) })).allowed,
      false,
    );
    const podReq = {
      uid: 'pod-1',
      kind: { group: '', version: 'v1', kind: 'Pod' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      namespace: 'shop',
      operation: 'CREATE',
      object: { apiVersion: 'v1', kind: 'Pod', metadata: { generateName: 'web-' }, spec: { containers: [] } },
    };
    for (const p of ['/inject', '/inject/', '/inject/cluster/c1/net/n1']) {
      const resp = responseOf(await call(server, { path: p, body: review('admission.k8s.io/v1', podReq) }));
      assert.equal(resp.uid, 'pod-1', "the uid is the request's whatever the handler wrote");
      assert.equal(resp.patchType, 'JSONPatch');
      assert.deepEqual(JSON.parse(Buffer.from(String(resp.patch), 'base64').toString()), [
        { op: 'add', path: '/metadata/labels/x', value: 'y' },
      ]);
    }
    assert.deepEqual(
      paths.slice(-3),
      ['/inject', '/inject/', '/inject/cluster/c1/net/n1'],
      "the handler sees the path (istiod's /inject/:ENV… parameters)",
    );
    assert.equal(injected.at(-1)?.namespace, 'shop');
    assert.deepEqual(injected.at(-1)?.kind, { group: '', version: 'v1', kind: 'Pod' });
  });

  it('a handler that throws gets a denial naming the failure; the server keeps serving', async () => {
    const req = {
      uid: 'boom',
      kind: { group: '', version: 'v1', kind: 'Pod' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      name: 'explode',
      operation: 'CREATE',
      object: {},
    };
    const resp = responseOf(await call(server, { path: '/inject', body: review('admission.k8s.io/v1', req) }));
    assert.equal(resp.allowed, false);
    assert.deepEqual(resp.status, { code: 500, message: "internal error in meshpilot's inject webhook: template exploded" });
    assert.ok(logs.lines.some((l) => l.includes('admission handler failed') && l.includes('template exploded')));
    assert.equal((await call(server, { path: '/httpsReady', method: 'GET' })).status, 200);
  });

  it('without an injection handler /inject is a 404 saying so', async () => {
    const r = await call(bare, { path: '/inject', body: review('admission.k8s.io/v1', vsRequest('x', good)) });
    assert.equal(r.status, 404);
    assert.match(r.body, /^\/inject: sidecar injection is not available in this meshpilot \(it needs a cluster\)/);
  });
});

describe('webhook server: bad requests are refused clearly, never a crash', () => {
  const cases: { name: string; opts: Parameters<typeof call>[1]; status: number; body: RegExp }[] = [
    { name: 'unknown path', opts: { path: '/mutate', body: '{}' }, status: 404, body: /no webhook at \/mutate/ },
    { name: 'GET', opts: { method: 'GET' }, status: 405, body: /method GET not allowed/ },
    { name: 'no content type', opts: { body: '{}', contentType: null }, status: 415, body: /want `application\/json`/ },
    {
      name: 'YAML content type',
      opts: { body: 'a: b', contentType: 'application/yaml' },
      status: 415,
      body: /invalid Content-Type "application\/yaml"/,
    },
    { name: 'empty body', opts: {}, status: 400, body: /^no body found/ },
    { name: 'not JSON', opts: { body: '{"apiVersion": ' }, status: 400, body: /\/validate: could not decode body: / },
    { name: 'a JSON array', opts: { body: '[1,2]' }, status: 400, body: /expected a JSON object/ },
    {
      name: 'not an AdmissionReview',
      opts: { body: JSON.stringify({ apiVersion: 'v1', kind: 'Pod' }) },
      status: 400,
      body: /kind: expected "AdmissionReview", got "Pod"/,
    },
    {
      name: 'unknown admission version',
      opts: { body: review('admission.k8s.io/v2', {}) },
      status: 400,
      body: /apiVersion: expected one of admission.k8s.io\/v1, admission.k8s.io\/v1beta1, got "admission.k8s.io\/v2"/,
    },
    {
      name: 'no request',
      opts: { body: JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: {} }) },
      status: 400,
      body: /request: missing/,
    },
    {
      name: 'request without uid',
      opts: { body: review('admission.k8s.io/v1', { ...vsRequest('', good), uid: undefined }) },
      status: 400,
      body: /request\.uid: missing/,
    },
    {
      name: 'bad operation',
      opts: { body: review('admission.k8s.io/v1', { ...vsRequest('u', good), operation: 'PATCH' }) },
      status: 400,
      body: /request\.operation: expected one of CREATE, UPDATE, DELETE, CONNECT, got "PATCH"/,
    },
    {
      name: 'kind without version',
      opts: {
        body: review('admission.k8s.io/v1', { ...vsRequest('u', good), kind: { group: 'networking.istio.io', kind: 'VirtualService' } }),
      },
      status: 400,
      body: /request\.kind\.version: missing/,
    },
    {
      name: 'namespace not a string',
      opts: { body: review('admission.k8s.io/v1', { ...vsRequest('u', good), namespace: 7 }) },
      status: 400,
      body: /request\.namespace: expected a string/,
    },
  ];
  for (const c of cases) {
    it(c.name, async () => {
      const r = await call(server, c.opts);
      assert.equal(r.status, c.status, r.body);
      assert.match(r.body, c.body);
    });
  }

  it('a body over 6 MiB is refused with 413, declared or streamed', async () => {
    const big = `{"pad":"${'x'.repeat(6 * 1024 * 1024 + 10)}"}`;
    const declared = await call(server, { body: big });
    assert.equal(declared.status, 413, declared.body);
    assert.match(declared.body, /over the limit of 6291456 bytes/);
    const streamed = await call(server, { body: big, chunked: true }).catch((err: unknown) => err);
    // The server answers 413 and stops reading; the client sees the answer, or the reset if it was still writing.
    if (streamed instanceof Error) assert.match((streamed as NodeJS.ErrnoException).code ?? '', /^(ECONNRESET|EPIPE)$/, streamed.message);
    else assert.equal((streamed as Reply).status, 413, (streamed as Reply).body);
  });

  it('plaintext HTTP and TLS garbage on the port only end that connection', async () => {
    for (const junk of ['GET /validate HTTP/1.1\r\nHost: x\r\n\r\n', '\x16\x03\x01\x00\x05hello']) {
      await new Promise<void>((resolve) => {
        const sock = netConnect({ host: '127.0.0.1', port: server.port }, () => sock.write(junk));
        sock.on('data', () => {});
        sock.on('close', () => resolve());
        sock.on('error', () => resolve());
        sock.setTimeout(5000, () => sock.destroy());
      });
    }
    assert.equal(responseOf(await call(server, { body: review('admission.k8s.io/v1', vsRequest('after-junk', good)) })).allowed, true);
  });
});

describe('webhook server: serving certificate replaced in place', () => {
  it('after setIdentity new connections present the new chain (old trust fails, new trust works)', async () => {
    const other = await newCa('other');
    const body = review('admission.k8s.io/v1', vsRequest('rot', good));
    await assert.rejects(call(bare, { body, trust: other.trustBundlePem() }), /self[- ]signed|unable to verify|certificate/i);
    bare.setIdentity(await identity(other));
    assert.equal(responseOf(await call(bare, { body, trust: other.trustBundlePem() })).allowed, true);
    await assert.rejects(call(bare, { body, trust: ca.trustBundlePem() }), /self[- ]signed|unable to verify|certificate/i);
  });
});
