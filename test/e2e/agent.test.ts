/**
 * Node agent end to end: `meshpilot discovery` with its CA on --secureGRPCAddr (JWT_RULE
 * with an inline JWKS), `meshpilot agent --mode grpc` as child processes with test JWTs.
 *
 * 1. One agent: verifiable certificate files and a gRPC bootstrap, ADS relayed over mTLS to the
 *    secure port, renewal with its own certificate before expiry (short TTL), nothing for a forged token.
 * 2. Real grpc-js-xds peers, each bootstrapped only by its own agent (no test-minted certs, no
 *    plaintext xDS): an XdsServer under PeerAuthentication STRICT + AuthorizationPolicy, clients of
 *    two identities, and certificate rotations while RPCs keep succeeding.
 */
import assert from 'node:assert/strict';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { X509Certificate, createPrivateKey, createPublicKey } from 'node:crypto';
import { access, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey } from 'jose';
import { validateBootstrapConfig } from '@grpc/grpc-js-xds/build/src/xds-bootstrap.js';
import { trackChild } from '../support/cleanup.js';
import { serviceEntry, workloadEntry } from '../support/mesh-fixtures.js';
import { startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import { MESHPILOT_CLI, PARENT_WATCHDOG_URL, REPO_ROOT } from '../support/paths.js';
import { freePorts } from '../support/ports.js';
import { AdsStream } from '../support/raw-ads-client.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import { ECHO_PATHS, startXdsPeer, type PeerTally, type XdsPeer } from '../support/xds-security-bootstrap.js';
import { writeYaml } from '../support/yaml-files.js';

const run = promisify(execFile);
const ISSUER = 'https://issuer.meshpilot.test';
const AUDIENCE = 'istio-ca';
const NS = 'foo';
const id = (sa: string): string => `spiffe://cluster.local/ns/${NS}/sa/${sa}`;
const host = (name: string): string => `${name}.${NS}.svc.cluster.local`;
const LISTENER_TYPE = 'type.googleapis.com/envoy.config.listener.v3.Listener';
const PERMISSION_DENIED = 7;

interface AgentProcess {
  readonly lines: string[];
  readonly out: string;
  readonly bootstrapFile: string;
  readonly xdsSocket: string;
  stop(): Promise<void>;
}

let dir: TempDir;
let mp: Meshpilot;
let secureAddr: string;
let caRoot: string;
let serverPort: number;
let signingKey: CryptoKey;
const agents: AgentProcess[] = [];

const exists = (p: string): Promise<boolean> =>
  access(p).then(
    () => true,
    () => false,
  );
const serialOf = async (file: string): Promise<string> => new X509Certificate(await readFile(file, 'utf8')).serialNumber;
const token = (sub: string, key: CryptoKey = signingKey): Promise<string> =>
  new SignJWT({})
    .setProtectedHeader({ alg: 'ES256', kid: 'test-key' })
    .setIssuer(ISSUER)
    .setAudience(AUDIENCE)
    .setSubject(sub)
    .setIssuedAt()
    .setExpirationTime('1h')
    .sign(key);
const logs = (...from: (AgentProcess | XdsPeer | undefined)[]): string =>
  `\n--- meshpilot ---\n${mp?.tail(20) ?? ''}${from.map((a) => (a && 'lines' in a ? `\n--- agent ---\n${a.lines.slice(-20).join('\n')}` : a ? `\n--- ${a.name} ---\n${a.tail(15)}` : '')).join('')}`;

/** `meshpilot agent --mode grpc` for pod `<name>` with service account `sa`, as a child with stderr kept. */
async function startAgent(name: string, sa: string, opts: { labels?: string; ttl?: string; jwt?: string } = {}): Promise<AgentProcess> {
  const base = path.join(dir.path, 'agents', name);
  const tokenFile = `${base}-token`;
  await mkdir(path.dirname(base), { recursive: true });
  await writeFile(tokenFile, opts.jwt ?? (await token(`system:serviceaccount:${NS}:${sa}`)));
  const a = { out: path.join(base, 'certs'), bootstrapFile: path.join(base, 'grpc-bootstrap.json'), xdsSocket: path.join(base, 'XDS') };
  const env: Record<string, string | undefined> = { ...process.env, MESHPILOT_PARENT_WATCHDOG: '1' };
  for (const k of Object.keys(env)) if (k === 'NODE_TEST_CONTEXT' || k.startsWith('GRPC_XDS') || k.startsWith('ISTIO_META')) delete env[k];
  const args = [
    '--mode',
    'grpc',
    '--xdsAddr',
    secureAddr,
    '--caRootCert',
    caRoot,
    '--tokenFile',
    tokenFile,
    '--outputDir',
    a.out,
    '--grpcBootstrap',
    a.bootstrapFile,
    '--xdsSocket',
    a.xdsSocket,
    '--podName',
    `${name}-0`,
    '--namespace',
    NS,
    '--serviceAccount',
    sa,
    '--podIp',
    '127.0.0.1',
    '--labels',
    opts.labels ?? `app=${name}`,
    '--secretTTL',
    opts.ttl ?? '1h',
    '--secretGracePeriodRatioJitter',
    '0',
    '--retryInitialInterval',
    '200ms',
    '--retryMaxInterval',
    '2s',
    '--certRefreshInterval',
    '1s',
  ];
  const child: ChildProcess = spawn(
    process.execPath,
    ['--import', 'tsx', '--import', PARENT_WATCHDOG_URL, MESHPILOT_CLI, 'agent', ...args],
    {
      cwd: REPO_ROOT,
      env,
      stdio: ['pipe', 'ignore', 'pipe'],
    },
  );
  trackChild(child);
  const lines: string[] = [];
  createInterface({ input: child.stderr! }).on('line', (l) => lines.push(l));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const agent: AgentProcess = {
    ...a,
    lines,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const t = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
    },
  };
  agents.push(agent);
  return agent;
}

const ready = (a: AgentProcess): Promise<unknown> =>
  waitFor(() => exists(a.bootstrapFile), { description: 'the agent bootstrap', timeoutMs: 30_000 }).catch((e: Error) =>
    assert.fail(e.message + logs(a)),
  );

async function openssl(args: string[]): Promise<{ code: number; out: string }> {
  try {
    const r = await run('openssl', args, { encoding: 'utf8' });
    return { code: 0, out: r.stdout + r.stderr };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; code?: number };
    return { code: typeof e.code === 'number' ? e.code : 1, out: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

before(async () => {
  dir = tempDir('meshpilot-agent-e2e-');
  [serverPort] = (await freePorts(1)) as [number];
  const sec = (kind: string, name: string, spec: Record<string, unknown>) => ({
    apiVersion: 'security.istio.io/v1',
    kind,
    metadata: { name, namespace: NS },
    spec,
  });
  const onServer = { matchLabels: { app: 'server' } };
  const configDir = path.join(dir.path, 'config');
  await writeYaml(configDir, 'mesh.yaml', [
    serviceEntry('echo', { host: host('echo'), namespace: NS, selector: { app: 'echo' } }),
    workloadEntry('echo-1', { namespace: NS, port: 9000, labels: { app: 'echo' } }),
    serviceEntry('secure', { host: host('secure'), namespace: NS, selector: { app: 'server' } }),
    {
      ...workloadEntry('server-0', { namespace: NS, port: serverPort, labels: { app: 'server' } }),
      spec: { address: '127.0.0.1', ports: { grpc: serverPort }, labels: { app: 'server' }, serviceAccount: 'server' },
    },
    {
      apiVersion: 'networking.istio.io/v1',
      kind: 'DestinationRule',
      metadata: { name: 'secure', namespace: NS },
      spec: { host: host('secure'), trafficPolicy: { tls: { mode: 'ISTIO_MUTUAL' } } },
    },
    sec('PeerAuthentication', 'strict', { selector: onServer, mtls: { mode: 'STRICT' } }),
    sec('AuthorizationPolicy', 'allow-client', {
      selector: onServer,
      rules: [{ from: [{ source: { principals: [`cluster.local/ns/${NS}/sa/client`] } }] }],
    }),
    sec('AuthorizationPolicy', 'deny-secret', {
      selector: onServer,
      action: 'DENY',
      rules: [{ to: [{ operation: { paths: [ECHO_PATHS.secret] } }] }],
    }),
  ]);
  const keys = await generateKeyPair('ES256');
  signingKey = keys.privateKey;
  const jwk = { ...(await exportJWK(keys.publicKey)), kid: 'test-key', alg: 'ES256', use: 'sig' };
  const [securePort] = (await freePorts(1)) as [number];
  secureAddr = `127.0.0.1:${securePort}`;
  const caDir = path.join(dir.path, 'ca');
  mp = await startMeshpilot({
    configDir,
    env: { JWT_RULE: JSON.stringify({ issuer: ISSUER, audiences: [AUDIENCE], jwks: { keys: [jwk] } }) },
    args: ['--secureGRPCAddr', secureAddr, '--caDir', caDir],
  });
  caRoot = path.join(caDir, 'root-cert.pem');
  await waitFor(() => exists(caRoot), { description: 'the CA root file', timeoutMs: 20_000 });
});

after(async () => {
  await Promise.all(agents.map((a) => a.stop()));
  await mp?.stop();
  await dir?.remove();
});

describe('meshpilot agent against meshpilot discovery (CA + TLS xDS)', () => {
  let agent: AgentProcess;
  before(async () => {
    agent = await startAgent('client-a', 'client', { ttl: '8s' });
    await ready(agent);
  });

  it('writes cert-chain.pem, key.pem (0600), root-cert.pem and a gRPC bootstrap that grpc-js-xds accepts', async () => {
    const info = validateBootstrapConfig(JSON.parse(await readFile(agent.bootstrapFile, 'utf8')));
    assert.equal(info.xdsServers[0]?.server_uri, `unix://${agent.xdsSocket}`);
    assert.equal(info.serverListenerResourceNameTemplate, 'xds.istio.io/grpc/lds/inbound/%s');
    assert.equal(info.node.id, `sidecar~127.0.0.1~client-a-0.${NS}~${NS}.svc.cluster.local`);
    const provider = info.certificateProviders.default?.config;
    const files = ['cert-chain.pem', 'key.pem', 'root-cert.pem'].map((f) => path.join(agent.out, f));
    assert.deepEqual([provider?.certificateFile, provider?.privateKeyFile, provider?.caCertificateFile], files);
    assert.equal((await stat(files[1]!)).mode & 0o777, 0o600);
    assert.equal(await serialOf(files[2]!), await serialOf(caRoot));
    assert.ok(
      agent.lines.some((l) => l.includes('workload certificate issued') && l.includes('"auth":"token"')),
      logs(agent),
    );
  });

  it('issues a chain that openssl verifies against the root, for the caller identity, with the key it wrote', async () => {
    const chain = path.join(agent.out, 'cert-chain.pem');
    const v = await openssl(['verify', '-CAfile', path.join(agent.out, 'root-cert.pem'), '-untrusted', chain, chain]);
    assert.equal(v.code, 0, v.out);
    assert.match(v.out, /: OK/);
    const leaf = new X509Certificate(await readFile(chain, 'utf8'));
    assert.equal(leaf.subjectAltName, `URI:${id('client')}`);
    const keyPub = createPublicKey(createPrivateKey(await readFile(path.join(agent.out, 'key.pem'), 'utf8'))).export({
      type: 'spki',
      format: 'der',
    });
    assert.ok(leaf.publicKey.export({ type: 'spki', format: 'der' }).equals(keyPub), 'key.pem is the certificate key');
  });

  it('relays ADS from its local socket to the secure port over mTLS', async () => {
    const bootstrap = JSON.parse(await readFile(agent.bootstrapFile, 'utf8')) as { node: { id: string; metadata: Record<string, string> } };
    const ads = AdsStream.open(`unix:${agent.xdsSocket}`, { node: bootstrap.node });
    try {
      ads.subscribe(LISTENER_TYPE, [`${host('echo')}:8080`]);
      const r = await ads.next(LISTENER_TYPE, 15_000);
      assert.equal(r.resp.resources.length, 1, logs(agent));
    } finally {
      ads.close();
    }
  });

  it('renews with its current certificate before expiry and replaces the files', async () => {
    const chain = path.join(agent.out, 'cert-chain.pem');
    const first = await serialOf(chain);
    const firstKey = await readFile(path.join(agent.out, 'key.pem'), 'utf8');
    await waitFor(async () => (await serialOf(chain)) !== first, { description: 'a rotated certificate', timeoutMs: 20_000 }).catch(
      (e: Error) => assert.fail(e.message + logs(agent)),
    );
    assert.notEqual(await readFile(path.join(agent.out, 'key.pem'), 'utf8'), firstKey, 'a new key with the new certificate');
    const v = await openssl(['verify', '-CAfile', path.join(agent.out, 'root-cert.pem'), '-untrusted', chain, chain]);
    assert.equal(v.code, 0, v.out);
    assert.ok(
      agent.lines.some((l) => l.includes('workload certificate rotated') && l.includes('"auth":"cert"')),
      `renewed with the certificate${logs(agent)}`,
    );
  });

  it('gets nothing with a forged token, says why, and never logs key material', async () => {
    const forged = await token(`system:serviceaccount:${NS}:client`, (await generateKeyPair('ES256')).privateKey);
    const bad = await startAgent('mallory', 'client', { jwt: forged });
    await waitFor(() => bad.lines.some((l) => l.includes('workload certificate request failed')), {
      description: 'the refusal',
      timeoutMs: 30_000,
    });
    assert.match(
      bad.lines.find((l) => l.includes('workload certificate request failed'))!,
      /UNAUTHENTICATED/,
    );
    assert.equal(await exists(path.join(bad.out, 'key.pem')), false);
    await bad.stop();
    for (const l of [...agent.lines, ...bad.lines]) assert.doesNotMatch(l, /PRIVATE KEY/);
    assert.ok(!bad.lines.some((l) => l.includes(forged.slice(-20))), 'the token is not logged');
  });
});

describe('grpc-js-xds peers bootstrapped by meshpilot agent: STRICT mTLS, authorization, rotation', () => {
  const peers: Record<string, XdsPeer> = {};
  const agentOf: Record<string, AgentProcess> = {};
  const call = (who: string, p: string, n = 10): Promise<PeerTally> =>
    peers[who]!.call({ target: `xds:///${host('secure')}:8080`, path: p, n, secure: true, deadlineMs: 15_000 });

  before(async () => {
    // Short TTLs: server and client rotate every few seconds for the whole describe.
    const specs = [
      ['server', 'server', '10s'],
      ['client', 'client', '10s'],
      ['other', 'other', '1h'],
    ] as const;
    for (const [name, sa, ttl] of specs) agentOf[name] = await startAgent(name, sa, { ttl, labels: `app=${name}` });
    await Promise.all(Object.values(agentOf).map(ready));
    for (const [name] of specs)
      peers[name] = await startXdsPeer(name, JSON.parse(await readFile(agentOf[name]!.bootstrapFile, 'utf8')) as Record<string, unknown>);
    await peers.server!.serve([serverPort]).catch((e: Error) => assert.fail(e.message + logs(agentOf.server, peers.server)));
  });
  after(() => Promise.all(Object.values(peers).map((p) => p.stop())));

  it('STRICT: the client talks mTLS to the XdsServer, which sees the SPIFFE identity the agent got from the CA', async () => {
    const t = await call('client', ECHO_PATHS.whoami);
    assert.deepEqual(
      { peers: t.peers, errors: t.errors },
      { peers: { [id('client')]: 10 }, errors: {} },
      JSON.stringify(t) + logs(agentOf.client, peers.client, peers.server),
    );
  });

  it('ALLOW only ns/foo/sa/client: the peer with the other identity gets PERMISSION_DENIED', async () => {
    const t = await call('other', ECHO_PATHS.whoami);
    assert.deepEqual({ ok: t.ok, errors: t.errors }, { ok: 0, errors: { [PERMISSION_DENIED]: 10 } }, JSON.stringify(t) + logs(peers.other));
  });

  it('DENY on /echo.Echo/Secret blocks that method only', async () => {
    const secret = await call('client', ECHO_PATHS.secret);
    assert.deepEqual({ ok: secret.ok, errors: secret.errors }, { ok: 0, errors: { [PERMISSION_DENIED]: 10 } }, JSON.stringify(secret));
    const whoami = await call('client', ECHO_PATHS.whoami);
    assert.deepEqual(whoami.peers, { [id('client')]: 10 }, JSON.stringify(whoami));
  });

  it('server and client certificates rotate while RPCs keep succeeding', async () => {
    const chain = (who: string): string => path.join(agentOf[who]!.out, 'cert-chain.pem');
    const start = { server: await serialOf(chain('server')), client: await serialOf(chain('client')) };
    // Until the client's current certificate has expired, so the late peer below cannot get by on it.
    const expired = Date.parse(new X509Certificate(await readFile(chain('client'), 'utf8')).validTo) + 1000;
    let batches = 0;
    let rotatedAt: number | undefined;
    // Keep calling through both rotations and for 3 s (3 file_watcher refreshes) after the later one.
    while (rotatedAt === undefined || Date.now() - rotatedAt < 3000 || Date.now() < expired) {
      const t = await call('client', ECHO_PATHS.whoami, 5);
      batches++;
      assert.deepEqual(
        { peers: t.peers, errors: t.errors },
        { peers: { [id('client')]: 5 }, errors: {} },
        `batch ${batches}: ${JSON.stringify(t)}${logs(agentOf.server, peers.server)}`,
      );
      if (
        rotatedAt === undefined &&
        (await serialOf(chain('server'))) !== start.server &&
        (await serialOf(chain('client'))) !== start.client
      )
        rotatedAt = Date.now();
      assert.ok(batches < 400, 'no rotation within the test');
      await new Promise((r) => setTimeout(r, 100));
    }
    for (const who of ['server', 'client'])
      assert.ok(
        agentOf[who]!.lines.some((l) => l.includes('workload certificate rotated')),
        `${who} rotated`,
      );
    // A process started now dials afresh: the server's rotated certificate, the client's rotated one,
    // and an upstream connection from the client's agent that must present its newest certificate.
    peers.late = await startXdsPeer('late', JSON.parse(await readFile(agentOf.client!.bootstrapFile, 'utf8')) as Record<string, unknown>);
    const t = await call('late', ECHO_PATHS.whoami);
    assert.deepEqual(
      { peers: t.peers, errors: t.errors },
      { peers: { [id('client')]: 10 }, errors: {} },
      JSON.stringify(t) + logs(peers.late, peers.server),
    );
  });
});
