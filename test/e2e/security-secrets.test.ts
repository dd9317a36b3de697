/**
 * No private key, token or CSR body in any log line or debug answer. The
 * processes that handle secrets run through their flows — meshpilot discovery with its CA
 * (signing, a garbage CSR, a private key sent as the CSR, a forged token, an oversized CSR), the
 * node agent in Envoy mode (CSR, SDS over its socket), the CNI installer writing a kubeconfig with
 * a token — and every stdout/stderr line, every debug endpoint body on both HTTP ports, the xDS
 * debug answers on 15012 and every error message a client got are scanned (test/support/secret-scan.ts).
 * The flows are checked to have really carried key material (the SDS answer holds a private key,
 * the kubeconfig the token), so a clean scan means "not leaked", not "never there".
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { cp, mkdir, readFile, writeFile, access } from 'node:fs/promises';
import { request as httpsRequest } from 'node:https';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { create, toBinary } from '@bufbuild/protobuf';
import * as grpc from '@grpc/grpc-js';
import { sdsServiceDefinition } from '../../src/agent/sds-server.js';
import {
  DiscoveryRequestSchema,
  DiscoveryResponseSchema,
  type DiscoveryResponse,
} from '../../src/gen/envoy/service/discovery/v3/discovery_pb.js';
import { CONFIG_DUMP_TYPE, SYNCZ_TYPE, xdsDebugRequest } from '../../src/meshctl/proxy/xds-debug-client.js';
import { callCreateCertificate } from '../../src/security/csr/test-client.js';
import { makeCsr } from '../../src/security/test-helpers.js';
import { terminate, trackChild } from '../support/cleanup.js';
import { startJwtCaMeshpilot, type JwtCaMeshpilot } from '../support/jwt-ca-meshpilot.js';
import type { Meshpilot } from '../support/meshpilot-process.js';
import { MESHPILOT_CLI, PARENT_WATCHDOG_URL, REPO_ROOT } from '../support/paths.js';
import { AdsStream } from '../support/raw-ads-client.js';
import { scanForSecrets, SecretScanner } from '../support/secret-scan.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { TYPE } from '../support/xds-resources.js';
import { BOOKINFO_DIR, BOOKINFO_PROXIES } from '../scenarios/bookinfo-fixture.js';

const SDS_TYPE = 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret';
const GATEWAY = BOOKINFO_PROXIES['ingress-gateway']!;
const DEBUG_GETS = ['list', 'syncz', `config_dump?proxyID=${GATEWAY.id}`, 'adsz', 'push_status', 'configz', 'registryz', 'cachez'];

/** Bytes as text for the scanner: PEM and JWTs are ASCII inside any protobuf. */
const asText = (b: Uint8Array): string => Buffer.from(b).toString('latin1');

interface CliProcess {
  readonly lines: string[];
  stop(): Promise<void>;
}

/** `meshpilot <args>` as a child, stdout and stderr kept line by line. */
function runCli(args: readonly string[], env: Record<string, string> = {}): CliProcess {
  const childEnv: Record<string, string | undefined> = { ...process.env, ...env, MESHPILOT_PARENT_WATCHDOG: '1' };
  for (const k of Object.keys(childEnv))
    if (k === 'NODE_TEST_CONTEXT' || k.startsWith('GRPC_XDS') || k.startsWith('ISTIO_META')) delete childEnv[k];
  const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', '--import', PARENT_WATCHDOG_URL, MESHPILOT_CLI, ...args], {
    cwd: REPO_ROOT,
    env: childEnv,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  trackChild(child);
  const lines: string[] = [];
  for (const s of [child.stdout, child.stderr]) if (s) createInterface({ input: s }).on('line', (l) => lines.push(l));
  return { lines, stop: () => terminate(child) };
}

const exists = (p: string): Promise<boolean> =>
  access(p).then(
    () => true,
    () => false,
  );

let dir: TempDir;
let ca: JwtCaMeshpilot;
let mp: Meshpilot;
const scanner = new SecretScanner();
const children: CliProcess[] = [];
const streams: AdsStream[] = [];
/** Material the flows carried, for the positive controls. */
const carried: { token?: string; csrPem?: string; keyPem?: string; sdsAnswer?: string; kubeconfig?: string } = {};

before(async () => {
  dir = tempDir('meshpilot-security-secrets-');
  const configDir = path.join(dir.path, 'config');
  await cp(path.join(BOOKINFO_DIR, 'config'), configDir, { recursive: true });
  ca = await startJwtCaMeshpilot(configDir, path.join(dir.path, 'ca'));
  mp = ca.mp;
});

after(async () => {
  for (const s of streams) s.close();
  await Promise.all(children.map((c) => c.stop()));
  await mp?.stop();
  await dir?.remove();
});

describe('no private key, token or CSR in logs or debug output', () => {
  it('CA: a signed CSR, a garbage CSR, a private key sent as the CSR, a forged token, an oversized CSR', async () => {
    const good = await ca.token('bookinfo', 'productpage');
    const csr = await makeCsr();
    Object.assign(carried, { token: good, csrPem: csr.csrPem, keyPem: csr.keyPem });
    const call = (csrPem: string, t = good) => callCreateCertificate({ address: ca.secureAddr, rootPem: ca.rootPem, csrPem, token: t });
    const signed = await call(csr.csrPem);
    assert.ok(signed.ok, signed.ok ? '' : signed.details);
    const refusals = {
      'garbage CSR': await call('-----BEGIN CERTIFICATE REQUEST-----\nbm90IGEgQ1NSIGF0IGFsbA==\n-----END CERTIFICATE REQUEST-----\n'),
      'private key as the CSR': await call(csr.keyPem),
      'CSR and key bundled': await call(`${csr.csrPem}${csr.keyPem}`.replace('REQUEST-----\n', 'REQUEST-----\n!')),
      'forged token': await call(csr.csrPem, await ca.forgedToken('bookinfo', 'productpage')),
      'oversized CSR': await call(csr.csrPem + 'A'.repeat(64 * 1024)),
    };
    for (const [what, r] of Object.entries(refusals)) {
      assert.ok(!r.ok, `${what}: a certificate was issued`);
      scanner.add(`CreateCertificate answer (${what})`, r.details);
    }
  });

  it('node agent (Envoy mode): certificate over the CA, SDS default and ROOTCA over its socket', async () => {
    const base = path.join(dir.path, 'agent');
    await mkdir(base, { recursive: true });
    const tokenFile = path.join(base, 'token');
    await writeFile(tokenFile, await ca.token('bookinfo', 'reviews'));
    const sdsSocket = path.join(base, 'sds.sock');
    const agent = runCli([
      'agent',
      '--mode',
      'envoy',
      '--xdsAddr',
      ca.secureAddr,
      '--caRootCert',
      ca.rootFile,
      '--tokenFile',
      tokenFile,
      '--envoyBootstrap',
      path.join(base, 'envoy-rev.json'),
      '--xdsSocket',
      path.join(base, 'XDS'),
      '--sdsSocket',
      sdsSocket,
      '--podName',
      'reviews-v1-1',
      '--namespace',
      'bookinfo',
      '--serviceAccount',
      'reviews',
      '--podIp',
      '127.0.0.1',
      '--labels',
      'app=reviews',
      '--retryInitialInterval',
      '200ms',
      '--runEnvoy',
      'false',
      '--statusPort',
      '0',
    ]);
    children.push(agent);
    await waitFor(() => exists(sdsSocket), { description: 'the agent SDS socket', timeoutMs: 30_000 }).catch((e: Error) =>
      assert.fail(`${e.message}\n${agent.lines.slice(-20).join('\n')}`),
    );
    const client = new grpc.Client(`unix:${sdsSocket}`, grpc.credentials.createInsecure());
    try {
      const answer = await new Promise<DiscoveryResponse>((resolve, reject) => {
        const s = client.makeBidiStreamRequest(
          sdsServiceDefinition.StreamSecrets.path,
          (r: Parameters<typeof toBinary<typeof DiscoveryRequestSchema>>[1]) => Buffer.from(toBinary(DiscoveryRequestSchema, r)),
          (b: Buffer) => sdsServiceDefinition.StreamSecrets.responseDeserialize(b),
        );
        const timer = setTimeout(() => reject(new Error(`no SDS answer\n${agent.lines.slice(-20).join('\n')}`)), 20_000);
        s.on('data', (r: DiscoveryResponse) => {
          clearTimeout(timer);
          s.cancel();
          resolve(r);
        });
        s.on('error', () => undefined);
        s.write(
          create(DiscoveryRequestSchema, {
            node: { id: 'sidecar~127.0.0.1~reviews-v1-1.bookinfo~bookinfo.svc.cluster.local' },
            typeUrl: SDS_TYPE,
            resourceNames: ['default', 'ROOTCA'],
          }),
        );
      });
      carried.sdsAnswer = asText(toBinary(DiscoveryResponseSchema, answer));
    } finally {
      client.close();
    }
  });

  it('CNI installer: writes the plugin kubeconfig with its token', async () => {
    const net = path.join(dir.path, 'cni', 'net.d');
    const bin = path.join(dir.path, 'cni', 'bin');
    await mkdir(net, { recursive: true });
    await mkdir(bin, { recursive: true });
    await writeFile(
      path.join(net, '10-bridge.conflist'),
      JSON.stringify({ cniVersion: '1.0.0', name: 'bridge-net', plugins: [{ type: 'bridge' }] }),
    );
    const plugin = path.join(dir.path, 'cni', 'meshpilot-cni');
    await writeFile(plugin, '#!/bin/sh\nexit 0\n', { mode: 0o755 });
    const saToken = await ca.token('kube-system', 'istio-cni');
    const kubeconfigIn = path.join(dir.path, 'cni', 'kubeconfig');
    await writeFile(
      kubeconfigIn,
      `apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:6443'}}]\nusers: [{name: u, user: {token: ${saToken}}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n`,
    );
    const cni = runCli([
      'cni',
      'install',
      '--cni-net-dir',
      net,
      '--cni-bin-dir',
      bin,
      '--kubeconfig',
      kubeconfigIn,
      '--plugin-file',
      plugin,
      '--log-level',
      'debug',
    ]);
    children.push(cni);
    const written = path.join(net, 'ZZZ-meshpilot-cni-kubeconfig');
    await waitFor(
      async () => (await exists(written)) && (await readFile(path.join(net, '10-bridge.conflist'), 'utf8')).includes('meshpilot'),
      {
        description: 'the CNI kubeconfig and chained config',
        timeoutMs: 30_000,
      },
    ).catch((e: Error) => assert.fail(`${e.message}\n${cni.lines.slice(-20).join('\n')}`));
    carried.kubeconfig = await readFile(written, 'utf8');
    await cni.stop();
    scanner.add('meshpilot cni install output', cni.lines.join('\n'));
  });

  it('debug endpoints on both HTTP ports and the xDS debug types on 15012, with a gateway holding its credential', async () => {
    // The gateway is connected and got its certificate's key over SDS: the debug views have it at hand.
    const gw = AdsStream.open(mp.grpcAddr, {
      node: { id: GATEWAY.id, metadata: { NAMESPACE: 'istio-system', LABELS: GATEWAY.labels ?? {}, CLUSTER_ID: 'Kubernetes' } },
    });
    streams.push(gw);
    gw.subscribe(TYPE.LDS, []);
    gw.ack((await gw.next(TYPE.LDS)).resp);
    gw.subscribe(SDS_TYPE, ['kubernetes://bookinfo-cert']);
    const sds = await gw.next(SDS_TYPE);
    gw.ack(sds.resp);
    assert.ok(
      scanForSecrets(asText(toBinary(DiscoveryResponseSchema, sds.resp)), 'sds').some((f) => f.kind === 'private key'),
      'the gateway got its private key over SDS',
    );

    for (const addr of [mp.httpAddr, mp.monitoringAddr]) {
      for (const p of DEBUG_GETS) {
        const res = await fetch(`http://${addr}/debug/${p}`);
        const body = await res.text();
        assert.equal(res.status, 200, `${addr} /debug/${p}: ${body.slice(0, 200)}`);
        scanner.add(`GET http://${addr}/debug/${p}`, body);
      }
      const configz = await (await fetch(`http://${addr}/debug/configz`)).text();
      assert.match(configz, /"redacted": true/, 'the Secret is listed, redacted');
      // A change that carries a key: preview shows what it does, never the key.
      const change =
        (await readFile(path.join(BOOKINFO_DIR, 'config', 'gateway-cert.yaml'), 'utf8')).replace('bookinfo-cert', 'bookinfo-cert-2') +
        `---\napiVersion: v1\nkind: Secret\nmetadata: {name: inline, namespace: istio-system}\ntype: kubernetes.io/tls\nstringData:\n  tls.key: |\n${(
          carried.keyPem ?? ''
        )
          .trim()
          .split('\n')
          .map((l) => `    ${l}`)
          .join('\n')}\n`;
      const preview = await fetch(`http://${addr}/debug/preview?proxyID=${encodeURIComponent(GATEWAY.id)}`, {
        method: 'POST',
        body: change,
      });
      const previewBody = await preview.text();
      assert.equal(preview.status, 200, previewBody.slice(0, 300));
      scanner.add(`POST http://${addr}/debug/preview`, previewBody);
    }

    const tls = { rootCertPem: ca.rootPem };
    const istiodToken = await ca.token('istio-system', 'istiod');
    const dump = await xdsDebugRequest({ address: ca.secureAddr, tls, token: istiodToken }, CONFIG_DUMP_TYPE, [GATEWAY.id]);
    assert.ok(dump.resources.length > 0, 'config_dump over 15012 answered for the gateway');
    scanner.add('istio.io/debug/config_dump on 15012', asText(toBinary(DiscoveryResponseSchema, dump)));
    const syncz = await xdsDebugRequest({ address: ca.secureAddr, tls, token: istiodToken }, SYNCZ_TYPE, []);
    assert.ok(syncz.resources.length > 0);
    scanner.add('istio.io/debug/syncz on 15012', asText(toBinary(DiscoveryResponseSchema, syncz)));
  });

  it('webhooks: an invalid object carrying a key and a token, and an undecodable body, at /validate', async () => {
    const line = await mp.waitForLog((l) => l.json?.msg === 'webhook server listening (HTTPS)', { description: 'the webhook address' });
    const addr = String(line.json?.addr);
    const post = (body: string): Promise<{ status: number; body: string }> =>
      new Promise((resolve, reject) => {
        const req = httpsRequest(
          `https://${addr}/validate`,
          { method: 'POST', ca: ca.rootPem, servername: 'istiod.istio-system.svc', headers: { 'content-type': 'application/json' } },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    const vs = {
      apiVersion: 'networking.istio.io/v1',
      kind: 'VirtualService',
      metadata: { name: 'leaky', namespace: 'bookinfo' },
      spec: { hosts: [carried.keyPem ?? ''], http: [{ route: [{ destination: { host: carried.token ?? '' } }] }] },
    };
    const review = {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid: 'u1',
        kind: { group: 'networking.istio.io', version: 'v1', kind: 'VirtualService' },
        resource: { group: 'networking.istio.io', version: 'v1', resource: 'virtualservices' },
        operation: 'CREATE',
        namespace: 'bookinfo',
        name: 'leaky',
        object: vs,
      },
    };
    const denied = await post(JSON.stringify(review));
    assert.equal(denied.status, 200);
    assert.match(denied.body, /"allowed":\s*false/, 'the object was refused');
    assert.ok((await post(`${carried.keyPem ?? ''}`)).status >= 400, 'an undecodable body is refused');
    await mp.waitForLog((l) => l.json?.msg === 'configuration is invalid', { description: 'the validation log line' });
  });

  it('the scan recognises the material the flows carried (so a clean scan means it did not leak)', () => {
    const kinds = (text: string | undefined): string[] => [...new Set(scanForSecrets(text ?? '', 'control').map((f) => f.kind))].sort();
    assert.deepEqual(kinds(carried.keyPem), ['private key']);
    assert.deepEqual(kinds(carried.csrPem), ['CSR']);
    assert.deepEqual(kinds(carried.token), ['JWT']);
    assert.deepEqual(kinds(carried.sdsAnswer), ['private key'], 'the agent served its workload key over SDS');
    assert.deepEqual(kinds(carried.kubeconfig), ['JWT'], 'the CNI kubeconfig holds the token');
  });

  it('every log line and answer captured above is free of private keys, tokens and CSRs', async () => {
    await Promise.all(children.map((c) => c.stop()));
    for (const [i, c] of children.entries()) scanner.add(`child ${i} output`, c.lines.join('\n'));
    assert.ok(
      children.every((c) => c.lines.length > 0),
      'every child process logged something',
    );
    scanner.add(
      'meshpilot stderr',
      mp
        .logs()
        .map((l) => l.raw)
        .join('\n'),
    );
    assert.ok(
      mp.logs().some((l) => l.json?.msg === 'CSR signed'),
      'the signing flow is in the log',
    );
    assert.ok(
      mp.logs().some((l) => /CSR signing error|CSR refused|authentication failed/.test(String(l.json?.msg))),
      'the refusals are in the log',
    );
    assert.ok(scanner.scanned().length >= 2 * (DEBUG_GETS.length + 1) + 8, `everything was scanned: ${scanner.scanned().join(', ')}`);
    scanner.assertClean();
  });
});
