/**
 * DNS proxying end to end: a pod's network namespace with meshpilot's capture rules
 * (`meshpilot iptables --redirect-dns`), `meshpilot agent` inside it with ISTIO_META_DNS_CAPTURE
 * and ISTIO_META_DNS_AUTO_ALLOCATE (as uid 1337, as istio-proxy runs), the real Envoy started from
 * the agent's bootstrap, and a resolver in a second namespace — the pod's resolv.conf nameserver,
 * a tiny DNS server that knows only one name. The application's lookups (getaddrinfo, with the
 * Kubernetes search list and ndots:5) go to that nameserver, are captured to the agent on 15053
 * and answered from the name table meshpilot sent over xDS; other names reach the real resolver.
 * A TCP connection to a ServiceEntry host's allocated address is captured to Envoy and reaches the
 * host's endpoint (a TCP server in the second namespace) through the host's cluster: Envoy's
 * listener on `<allocated>:<port>`. The allocated address is not routable (240.240.0.0/16), so
 * passthrough could never have connected.
 *
 *   app netns 10.251.0.1 ── veth ── dns netns 10.251.0.2:53 (upstream)
 *   agent (uid 1337) → unix socket → this process → meshpilot's TLS port on loopback
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { access, readFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { TYPE_A } from '../../src/agent/dns/wire.js';
import { connect, createNetns, netnsSkipReason, type Netns } from '../support/cni/netns.js';
import { letOthersReachRepo, meshpilotInNetns } from '../support/cni/meshpilot-in-netns.js';
import { terminate, trackChild } from '../support/cleanup.js';
import { envoySkipReason, startEnvoy, type RunningEnvoy } from '../support/envoy.js';
import { startJwtCaMeshpilot, type JwtCaMeshpilot } from '../support/jwt-ca-meshpilot.js';
import { MESHPILOT_CLI, PARENT_WATCHDOG_URL, REPO_ROOT } from '../support/paths.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';

const skip = netnsSkipReason() ?? envoySkipReason();
const PROXY_UID = 1337;
const APP_IP = '10.251.0.1';
const RESOLVER_IP = '10.251.0.2';
const DNS_SCRIPTS = path.join(REPO_ROOT, 'test', 'support', 'dns');
const DB_PORT = 5432;

const CONFIG = `
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: external-api, namespace: default }
spec:
  hosts: [api.external.test]
  location: MESH_EXTERNAL
  # STATIC, not DNS: Envoy (uid 1337, never captured) would resolve a DNS host itself, upstream.
  resolution: STATIC
  ports: [{ number: 443, name: tls, protocol: TLS }]
  endpoints: [{ address: 198.51.100.20 }]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: reviews, namespace: default }
spec:
  hosts: [reviews.default.svc.cluster.local]
  addresses: [10.96.0.20]
  location: MESH_INTERNAL
  resolution: STATIC
  ports: [{ number: 9080, name: http, protocol: HTTP }]
  endpoints: [{ address: 10.244.0.9 }]
---
apiVersion: networking.istio.io/v1
kind: ServiceEntry
metadata: { name: db, namespace: default }
spec:
  hosts: [db.external.test]
  location: MESH_EXTERNAL
  resolution: STATIC
  ports: [{ number: ${DB_PORT}, name: tcp-db, protocol: TCP }]
  endpoints: [{ address: ${RESOLVER_IP} }]
`;

/** A TCP server in the resolver's namespace, the db host's endpoint: answers each connection with `echo:<what it got>` and its peer. */
const TCP_ENDPOINT = `
const net = require('node:net');
net.createServer((c) => c.once('data', (d) => c.end('echo:' + d.toString() + ' from ' + c.remoteAddress))).listen(${DB_PORT}, '${RESOLVER_IP}', () => console.log('listening'));
process.stdin.on('end', () => process.exit(0)).resume();
`;

/** The application: resolves the db host (captured DNS) and opens a TCP connection to it (captured to Envoy). */
const TCP_CLIENT = `
const dns = require('node:dns'), net = require('node:net');
dns.lookup('db.external.test', { family: 4 }, (err, address) => {
  if (err) return console.log(JSON.stringify({ error: String(err) }));
  const c = net.connect(${DB_PORT}, address, () => c.write('ping'));
  let got = '';
  c.on('data', (d) => (got += d)).on('end', () => console.log(JSON.stringify({ address, got })));
  c.on('error', (e) => console.log(JSON.stringify({ address, error: String(e) })));
  c.setTimeout(10000, () => c.destroy(new Error('timeout')));
});
`;

/** `node -e <code>` inside a namespace as root; its stdout lines. */
function inlineInNetns(ns: Netns, code: string): { child: ChildProcess; lines: string[] } {
  const child = spawn('ip', ['netns', 'exec', ns.name, process.execPath, '-e', code], { stdio: ['pipe', 'pipe', 'pipe'] });
  trackChild(child);
  const lines: string[] = [];
  createInterface({ input: child.stdout! }).on('line', (l) => lines.push(l));
  createInterface({ input: child.stderr! }).on('line', (l) => lines.push(`stderr: ${l}`));
  return { child, lines };
}

/** `node --import tsx <script> <json>` inside a namespace; its stdout lines. */
function nodeInNetns(ns: Netns, script: string, arg: unknown): { child: ChildProcess; lines: string[] } {
  const child = spawn(
    'ip',
    ['netns', 'exec', ns.name, process.execPath, '--import', 'tsx', path.join(DNS_SCRIPTS, script), JSON.stringify(arg)],
    {
      cwd: REPO_ROOT,
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  trackChild(child);
  const lines: string[] = [];
  createInterface({ input: child.stdout! }).on('line', (l) => lines.push(l));
  createInterface({ input: child.stderr! }).on('line', (l) => lines.push(`stderr: ${l}`));
  return { child, lines };
}

/** What the application sees (resolve-main.ts), run as root so that its DNS is captured. */
async function resolveInPod(ns: Netns, spec: unknown): Promise<{ lookups: Record<string, string[] | string>; queries: unknown[] }> {
  const { child, lines } = nodeInNetns(ns, 'resolve-main.ts', spec);
  await new Promise((r) => child.once('exit', r));
  const json = lines.find((l) => l.startsWith('{'));
  assert.ok(json, `resolve-main printed nothing:\n${lines.join('\n')}`);
  return JSON.parse(json) as { lookups: Record<string, string[] | string>; queries: unknown[] };
}

describe('agent DNS proxy in a pod network namespace', { skip }, () => {
  let dir: TempDir;
  let cp: JwtCaMeshpilot;
  let forwarder: net.Server;
  let app: Netns;
  let resolverNs: Netns;
  let upstream: { child: ChildProcess; lines: string[] };
  let tcpEndpoint: { child: ChildProcess; lines: string[] } | undefined;
  let agent: { child: ChildProcess; lines: string[] };
  let envoy: RunningEnvoy | undefined;
  const agentLog = (): string => agent?.lines.slice(-40).join('\n') ?? '';

  before(async () => {
    dir = tempDir('meshpilot-dns-e2e-');
    chmodSync(dir.path, 0o755);
    const configDir = path.join(dir.path, 'config');
    mkdirSync(configDir);
    writeFileSync(path.join(configDir, 'mesh.yaml'), CONFIG);
    cp = await startJwtCaMeshpilot(configDir, path.join(dir.path, 'ca'));

    // The agent lives in the pod's namespace; meshpilot listens on the host's loopback. A unix
    // socket crosses the boundary (the file system is shared): each connection is piped to 15012.
    const sockDir = path.join(dir.path, 'cp');
    mkdirSync(sockDir, { mode: 0o755 });
    const sock = path.join(sockDir, 'istiod.sock');
    const [host, port] = [cp.secureAddr.split(':')[0]!, Number(cp.secureAddr.split(':')[1])];
    forwarder = net.createServer((c) => {
      const up = net.connect(port, host);
      c.pipe(up).pipe(c);
      for (const s of [c, up]) s.on('error', () => [c, up].forEach((x) => x.destroy()));
    });
    await new Promise<void>((r) => forwarder.listen(sock, () => r()));
    chmodSync(sock, 0o777);

    app = createNetns('dnsapp');
    resolverNs = createNetns('dnsup');
    connect(app, [`${APP_IP}/24`], resolverNs, [`${RESOLVER_IP}/24`]);
    // A pod has a default route: without one, connect() to an address off the link fails before
    // iptables could redirect it.
    const route = spawnSync('ip', ['-n', app.name, 'route', 'add', 'default', 'via', RESOLVER_IP], { encoding: 'utf8' });
    assert.equal(route.status, 0, route.stderr);
    // The pod's resolv.conf as Kubernetes writes it (ip netns exec mounts it over /etc/resolv.conf).
    app.etcFile(
      'resolv.conf',
      `nameserver ${RESOLVER_IP}\nsearch default.svc.cluster.local svc.cluster.local cluster.local\noptions ndots:5\n`,
    );

    upstream = nodeInNetns(resolverNs, 'upstream-main.ts', {
      host: RESOLVER_IP,
      port: 53,
      records: { 'www.upstream.test': ['203.0.113.9'] },
    });
    await waitFor(() => upstream.lines.some((l) => l.startsWith('listening')), {
      description: 'the upstream DNS server',
      timeoutMs: 30_000,
    });

    // istio-init: DNS to the resolv.conf nameserver goes to 15053, other TCP to Envoy on 15001 (the proxy's own uid excepted).
    const init = await meshpilotInNetns(app, [
      'iptables',
      '-p',
      '15001',
      '-z',
      '15006',
      '-u',
      String(PROXY_UID),
      '-g',
      String(PROXY_UID),
      '-i',
      '*',
      '-b',
      '',
      '--redirect-dns',
    ]);
    assert.equal(init.code, 0, init.stderr);

    const agentDir = path.join(dir.path, 'agent');
    mkdirSync(agentDir, { mode: 0o700 });
    chownSync(agentDir, PROXY_UID, PROXY_UID);
    const tokenFile = path.join(agentDir, 'istio-token');
    writeFileSync(tokenFile, await cp.token('default', 'client'), { mode: 0o600 });
    const root = path.join(agentDir, 'root-cert.pem');
    copyFileSync(cp.rootFile, root);
    for (const f of [tokenFile, root]) chownSync(f, PROXY_UID, PROXY_UID);
    letOthersReachRepo();
    const env: Record<string, string | undefined> = {
      ...process.env,
      MESHPILOT_PARENT_WATCHDOG: '1',
      HOME: agentDir,
      ISTIO_META_DNS_CAPTURE: 'true',
      ISTIO_META_DNS_AUTO_ALLOCATE: 'true',
    };
    for (const k of Object.keys(env)) if (k === 'NODE_TEST_CONTEXT' || k.startsWith('GRPC_XDS') || k === 'PROXY_CONFIG') delete env[k];
    const argv = [
      ...['netns', 'exec', app.name, 'setpriv', `--reuid=${PROXY_UID}`, `--regid=${PROXY_UID}`, '--clear-groups'],
      ...[process.execPath, '--import', 'tsx', '--import', PARENT_WATCHDOG_URL, MESHPILOT_CLI, 'agent'],
      ...['--mode', 'envoy', '--xdsAddr', `unix:${sock}`, '--caRootCert', root, '--tokenFile', tokenFile],
      ...['--envoyBootstrap', path.join(agentDir, 'envoy-rev.json'), '--xdsSocket', path.join(agentDir, 'XDS')],
      ...['--sdsSocket', path.join(agentDir, 'SDS'), '--wasmCacheDir', path.join(agentDir, 'wasm')],
      ...['--podName', 'client-0', '--namespace', 'default', '--serviceAccount', 'client', '--podIp', APP_IP, '--labels', 'app=client'],
      ...['--runEnvoy', 'false', '--statusPort', '0'],
    ];
    const child = spawn('ip', argv, { cwd: REPO_ROOT, env, stdio: ['pipe', 'ignore', 'pipe'] });
    trackChild(child);
    agent = { child, lines: [] };
    createInterface({ input: child.stderr! }).on('line', (l) => agent.lines.push(l));
    const bootstrapFile = path.join(agentDir, 'envoy-rev.json');
    await waitFor(
      async () => {
        if (child.exitCode !== null) throw new Error(`agent exited ${child.exitCode}:\n${agentLog()}`);
        return access(bootstrapFile).then(
          () => true,
          () => false,
        );
      },
      { description: 'the agent bootstrap', timeoutMs: 60_000 },
    );
    const bootstrap = JSON.parse(await readFile(bootstrapFile, 'utf8')) as Record<string, unknown>;
    envoy = await startEnvoy({ bootstrap, netns: app.name, uid: PROXY_UID, logLevel: 'warning' });
    // Envoy's LDS request makes the agent ask for the name table on the same stream.
    await waitFor(() => agent.lines.some((l) => l.includes('DNS name table received')), {
      description: 'the agent to receive its name table',
      timeoutMs: 60_000,
    }).catch((e: Error) => assert.fail(`${e.message}\n--- agent ---\n${agentLog()}\n--- meshpilot ---\n${cp.mp.tail(20)}`));
  });

  after(async () => {
    await envoy?.stop();
    if (agent) await terminate(agent.child, 3000);
    if (tcpEndpoint) {
      tcpEndpoint.child.stdin?.end();
      await terminate(tcpEndpoint.child, 3000);
    }
    if (upstream) {
      upstream.child.stdin?.end();
      await terminate(upstream.child, 3000);
    }
    forwarder?.close();
    app?.remove();
    resolverNs?.remove();
    await cp?.mp.stop();
    await dir?.remove();
  });

  it('answers mesh names from the name table and forwards the rest to the pod resolver', async () => {
    const got = await resolveInPod(app, {
      lookups: ['api.external.test', 'reviews', 'reviews.default.svc.cluster.local', 'www.upstream.test', 'nowhere.upstream.test'],
      queries: [
        // Straight to the resolv.conf nameserver (which does not know the name): captured.
        { server: RESOLVER_IP, port: 53, name: 'api.external.test', type: TYPE_A, protocol: 'udp' },
        { server: RESOLVER_IP, port: 53, name: 'api.external.test', type: TYPE_A, protocol: 'tcp' },
        // The agent's own port.
        { server: '127.0.0.1', port: 15053, name: 'reviews.default.svc.cluster.local', type: TYPE_A, protocol: 'udp' },
      ],
    });
    const detail = `${JSON.stringify(got, null, 2)}\n--- agent ---\n${agentLog()}`;
    const api = got.lookups['api.external.test'];
    assert.ok(
      Array.isArray(api) && api.length === 1 && /^240\.240\.\d+\.\d+$/.test(api[0]!),
      `auto-allocated address for the ServiceEntry host: ${detail}`,
    );
    // The address meshpilot allocated to the host (its registry debug view).
    const registry = (await (await fetch(`http://${cp.mp.httpAddr}/debug/registryz`)).json()) as {
      hostname: string;
      autoAllocated?: { v4: string };
    }[];
    assert.equal(registry.find((s) => s.hostname === 'api.external.test')?.autoAllocated?.v4, api[0]);
    // The Kubernetes-style short name: the resolver's search list asks reviews.default.svc.cluster.local first.
    assert.deepEqual(got.lookups.reviews, ['10.96.0.20'], detail);
    assert.deepEqual(got.lookups['reviews.default.svc.cluster.local'], ['10.96.0.20'], detail);
    assert.deepEqual(got.lookups['www.upstream.test'], ['203.0.113.9'], detail);
    assert.equal(got.lookups['nowhere.upstream.test'], 'error: ENOTFOUND', detail);
    for (const q of got.queries.slice(0, 2))
      assert.deepEqual(
        q,
        { rcode: 0, authoritative: true, answers: [{ name: 'api.external.test', type: TYPE_A, ttl: 30, address: api[0] }] },
        detail,
      );
    assert.deepEqual(
      got.queries[2],
      {
        rcode: 0,
        authoritative: true,
        answers: [{ name: 'reviews.default.svc.cluster.local', type: TYPE_A, ttl: 30, address: '10.96.0.20' }],
      },
      detail,
    );
    // The upstream saw the names the table does not hold (search expansions of the outside
    // name included), and never a mesh name.
    await waitFor(() => upstream.lines.some((l) => l.includes('"nowhere.upstream.test"')), {
      description: 'upstream query log',
      timeoutMs: 5000,
    });
    const asked = upstream.lines.filter((l) => l.startsWith('{')).map((l) => (JSON.parse(l) as { asked: string }).asked);
    assert.ok(asked.includes('www.upstream.test'), asked.join(', '));
    // api.external.test's first search expansion is answered with a CNAME, so its lookup never
    // walks the search list; a name already in the first search domain gets no such shortcut (as
    // istio-agent), so the FQDN lookup with ndots:5 asks upstream for its expansions first.
    assert.ok(!asked.some((a) => a.startsWith('api.external.test')), `api.external.test reached the upstream: ${asked.join(', ')}`);
    assert.ok(!asked.includes('reviews.default.svc.cluster.local'), asked.join(', '));
    assert.ok(asked.includes('reviews.default.svc.cluster.local.svc.cluster.local'), asked.join(', '));
  });

  it("a TCP connection to a host's allocated address goes through the host's cluster to its endpoint", async () => {
    tcpEndpoint = inlineInNetns(resolverNs, TCP_ENDPOINT);
    await waitFor(() => tcpEndpoint!.lines.includes('listening'), { description: 'the db endpoint', timeoutMs: 30_000 });
    const cluster = `outbound|${DB_PORT}||db.external.test`;
    // Istio's stats tags spell the cluster's stat name with a `;` after the cluster name.
    const connections = async (): Promise<number> =>
      [...(await envoy!.stats(/^cluster\.outbound\|5432\|\|db\.external\.test;?\.upstream_cx_total$/)).values()].reduce((a, b) => a + b, 0);
    const before = await connections();
    // Envoy holds the listener on the allocated address once LDS has arrived.
    const registry = (await (await fetch(`http://${cp.mp.httpAddr}/debug/registryz`)).json()) as {
      hostname: string;
      autoAllocated?: { v4: string };
    }[];
    const allocated = registry.find((s) => s.hostname === 'db.external.test')?.autoAllocated?.v4;
    assert.ok(allocated, 'db.external.test has an allocated address');
    await waitFor(async () => (await envoy!.admin('listeners')).includes(`${allocated}_${DB_PORT}`), {
      description: `Envoy's listener ${allocated}_${DB_PORT}`,
      timeoutMs: 30_000,
    });
    const client = inlineInNetns(app, TCP_CLIENT);
    await new Promise((r) => client.child.once('exit', r));
    const json = client.lines.find((l) => l.startsWith('{'));
    assert.ok(json, `the client printed nothing:\n${client.lines.join('\n')}`);
    const got = JSON.parse(json) as { address: string; got?: string; error?: string };
    assert.deepEqual(
      got,
      { address: allocated, got: `echo:ping from ${APP_IP}` },
      JSON.stringify([...(await envoy!.stats(/5432|Passthrough|BlackHole|virtualOutbound/)).entries()].filter(([, v]) => v > 0)),
    );
    assert.equal((await connections()) - before, 1, `one connection through ${cluster}`);
  });
});
