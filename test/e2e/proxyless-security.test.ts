/**
 * Generators for proxyless security, end to end: real grpc-js-xds XdsServers and clients,
 * each a child process with its own bootstrap and SPIFFE certificate (openssl-minted test CA),
 * configured by a running meshpilot from Istio YAML.
 *
 * - `secure` server (sa/server): PeerAuthentication STRICT, ALLOW only ns/foo/sa/client, DENY
 *   /echo.Echo/Secret. Clients reach it through a DestinationRule ISTIO_MUTUAL.
 * - `open` server (sa/open): PERMISSIVE, with port-level DISABLE on its second port. gRPC serves
 *   PERMISSIVE as plaintext (as istiod configures it: a gRPC server cannot offer both on a port).
 * - clients: sa/client, sa/other, and a forger holding a sa/client certificate from another root.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { fromBinary } from '@bufbuild/protobuf';
import { ClusterSchema } from '../../src/gen/envoy/config/cluster/v3/cluster_pb.js';
import { ListenerSchema } from '../../src/gen/envoy/config/listener/v3/listener_pb.js';
import { pushRequest } from '../../src/model/push-request.js';
import { registerGrpcGenerators } from '../../src/networking/grpc/grpc-generators.js';
import { GeneratorRegistry } from '../../src/xds/generator.js';
import { assertValid } from '../../src/xds/pgv/index.js';
import { envoyValidationRegistry } from '../../src/model/json-registry.js';
import { TypeUrl } from '../../src/xds/type-urls.js';
import { startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import { freePorts } from '../support/ports.js';
import { loadScenario, proxyFor } from '../support/scenario.js';
import { createTestCa, issueSpiffeCert, spiffeId, type WorkloadCerts } from '../support/spiffe-certs.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { waitFor } from '../support/wait.js';
import {
  ECHO_PATHS,
  peerNode,
  securityBootstrap,
  startXdsPeer,
  type CallSpec,
  type PeerNode,
  type PeerTally,
  type XdsPeer,
} from '../support/xds-security-bootstrap.js';
import { writeYaml } from '../support/yaml-files.js';

const NS = 'foo';
const PERMISSION_DENIED = 7;
const UNAVAILABLE = 14;
const host = (name: string): string => `${name}.${NS}.svc.cluster.local`;
const target = (name: string, port = 8080): string => `xds:///${host(name)}:${port}`;
const CLIENT_ID = spiffeId(NS, 'client');

let dir: TempDir | undefined;
let mp: Meshpilot | undefined;
let peers: XdsPeer[] = [];
let ports: { secure: number; permissive: number; disable: number };
const nodes = {
  secure: peerNode('secure-0', NS, { app: 'secure-server' }),
  open: peerNode('open-0', NS, { app: 'open-server' }),
  client: peerNode('client-0', NS, { app: 'client' }),
  other: peerNode('other-0', NS, { app: 'other' }),
  forger: peerNode('forger-0', NS, { app: 'forger' }),
};
const peer = (name: keyof typeof nodes): XdsPeer => peers.find((p) => p.name === name) ?? assert.fail(`no peer ${name}`);

const doc = (apiVersion: string, kind: string, name: string, spec: Record<string, unknown>): Record<string, unknown> => ({
  apiVersion,
  kind,
  metadata: { name, namespace: NS },
  spec,
});
const net = (kind: string, name: string, spec: Record<string, unknown>): Record<string, unknown> =>
  doc('networking.istio.io/v1', kind, name, spec);
const sec = (kind: string, name: string, spec: Record<string, unknown>): Record<string, unknown> =>
  doc('security.istio.io/v1', kind, name, spec);
const service = (name: string, app: string, portNames: string[]): Record<string, unknown> =>
  net('ServiceEntry', name, {
    hosts: [host(name)],
    location: 'MESH_INTERNAL',
    resolution: 'STATIC',
    workloadSelector: { labels: { app } },
    ports: portNames.map((p, i) => ({ number: 8080 + i, name: p, protocol: 'GRPC' })),
  });
const workload = (name: string, app: string, sa: string, wports: Record<string, number>): Record<string, unknown> =>
  net('WorkloadEntry', name, { address: '127.0.0.1', ports: wports, labels: { app }, serviceAccount: sa });

function meshConfig(): [string, Record<string, unknown>[]][] {
  const selector = (app: string): Record<string, unknown> => ({ matchLabels: { app } });
  return [
    [
      'secure.yaml',
      [
        service('secure', 'secure-server', ['grpc']),
        workload('secure-0', 'secure-server', 'server', { grpc: ports.secure }),
        net('DestinationRule', 'secure', { host: host('secure'), trafficPolicy: { tls: { mode: 'ISTIO_MUTUAL' } } }),
        sec('PeerAuthentication', 'secure', { selector: selector('secure-server'), mtls: { mode: 'STRICT' } }),
        sec('AuthorizationPolicy', 'allow-client', {
          selector: selector('secure-server'),
          rules: [{ from: [{ source: { principals: [`cluster.local/ns/${NS}/sa/client`] } }] }],
        }),
        sec('AuthorizationPolicy', 'deny-secret', {
          selector: selector('secure-server'),
          action: 'DENY',
          rules: [{ to: [{ operation: { paths: [ECHO_PATHS.secret] } }] }],
        }),
      ],
    ],
    // The same server behind a service whose endpoint claims another identity: the client's SAN check must refuse it.
    [
      'impostor.yaml',
      [
        service('impostor', 'impostor', ['grpc']),
        workload('impostor-0', 'impostor', 'not-the-server', { grpc: ports.secure }),
        net('DestinationRule', 'impostor', { host: host('impostor'), trafficPolicy: { tls: { mode: 'ISTIO_MUTUAL' } } }),
      ],
    ],
    [
      'open.yaml',
      [
        service('open', 'open-server', ['grpc-permissive', 'grpc-disable']),
        workload('open-0', 'open-server', 'open', { 'grpc-permissive': ports.permissive, 'grpc-disable': ports.disable }),
        sec('PeerAuthentication', 'open', {
          selector: selector('open-server'),
          mtls: { mode: 'PERMISSIVE' },
          portLevelMtls: { [ports.disable]: { mode: 'DISABLE' } },
        }),
      ],
    ],
  ];
}

const withLogs = (msg: string, ...from: XdsPeer[]): string =>
  `${msg}\n--- meshpilot ---\n${mp?.tail(15) ?? ''}${from.map((p) => `\n--- ${p.name} ---\n${p.tail(15)}`).join('')}`;

/** `n` calls from `who`; the first call of a channel waits for its xDS config, so `n` is a batch. */
const calls = (who: XdsPeer, spec: Omit<CallSpec, 'n'> & { n?: number }): Promise<PeerTally> => who.call({ n: 20, ...spec });

describe('proxyless gRPC security (grpc-js-xds XdsServer ⇄ meshpilot ⇄ grpc-js-xds clients)', () => {
  before(async () => {
    dir = tempDir('meshpilot-proxyless-security-');
    const [secure, permissive, disable] = await freePorts(3);
    ports = { secure: secure!, permissive: permissive!, disable: disable! };
    const config = `${dir.path}/config`;
    for (const [file, docs] of meshConfig()) await writeYaml(config, file, docs);
    const certs = `${dir.path}/certs`;
    const root = await createTestCa(certs, 'root');
    const rogue = await createTestCa(certs, 'rogue');
    const pending: Record<keyof typeof nodes, Promise<WorkloadCerts>> = {
      secure: issueSpiffeCert(root, certs, 'secure', spiffeId(NS, 'server')),
      open: issueSpiffeCert(root, certs, 'open', spiffeId(NS, 'open')),
      client: issueSpiffeCert(root, certs, 'client', CLIENT_ID),
      other: issueSpiffeCert(root, certs, 'other', spiffeId(NS, 'other')),
      // Claims to be the client, signed by a root the mesh does not trust (it trusts the mesh root itself).
      forger: issueSpiffeCert(rogue, certs, 'forger', CLIENT_ID, { trustRoot: root }),
    };
    const names = Object.keys(nodes) as (keyof typeof nodes)[];
    const identities = new Map(await Promise.all(names.map(async (n) => [n, await pending[n]] as const)));
    mp = await startMeshpilot({ configDir: config });
    const grpcAddr = mp.grpcAddr;
    peers = await Promise.all(names.map((n) => startXdsPeer(n, securityBootstrap(grpcAddr, nodes[n], identities.get(n)))));
    // XdsServers open their ports only once meshpilot sent them a valid inbound Listener.
    await Promise.all([peer('secure').serve([ports.secure]), peer('open').serve([ports.permissive, ports.disable])]).catch(
      (err: unknown) => {
        throw new Error(withLogs(`servers did not start serving: ${(err as Error).message}`));
      },
    );
  });

  after(async () => {
    const crashed = mp !== undefined && !mp.alive();
    const tail = mp?.tail(30);
    const deadPeers = peers.filter((p) => !p.alive()).map((p) => `${p.name}:\n${p.tail(20)}`);
    await Promise.all(peers.map((p) => p.stop()));
    await mp?.stop();
    await dir?.remove();
    if (crashed) assert.fail(`meshpilot exited during the tests\n${tail}`);
    if (deadPeers.length > 0) assert.fail(`gRPC peers exited during the tests\n${deadPeers.join('\n')}`);
  });

  it('STRICT: the client talks mTLS (DestinationRule ISTIO_MUTUAL) and the server sees its SPIFFE identity', async () => {
    const client = peer('client');
    // The first batch of a channel waits through LDS → RDS → CDS → EDS; it must still all succeed.
    const t = await calls(client, { target: target('secure'), path: ECHO_PATHS.whoami, secure: true, deadlineMs: 15_000 });
    assert.deepEqual(
      { peers: t.peers, errors: t.errors },
      { peers: { [CLIENT_ID]: 20 }, errors: {} },
      withLogs(JSON.stringify(t), client, peer('secure')),
    );
  });

  it('STRICT refuses plaintext: the same target without TLS credentials fails with UNAVAILABLE', async (tc) => {
    const t = await calls(peer('client'), { target: target('secure'), path: ECHO_PATHS.whoami, secure: false });
    tc.diagnostic(JSON.stringify(t.details));
    assert.equal(t.ok, 0, JSON.stringify(t));
    assert.deepEqual(t.errors, { [UNAVAILABLE]: 20 }, JSON.stringify(t));
  });

  it('AuthorizationPolicy ALLOW only ns/foo/sa/client: another mesh identity gets PERMISSION_DENIED', async () => {
    const t = await calls(peer('other'), { target: target('secure'), path: ECHO_PATHS.whoami, secure: true, deadlineMs: 15_000 });
    assert.deepEqual(
      { ok: t.ok, errors: t.errors },
      { ok: 0, errors: { [PERMISSION_DENIED]: 20 } },
      withLogs(JSON.stringify(t), peer('other')),
    );
    assert.ok(
      t.details.every((d) => d.includes('Unauthorized RPC rejected')),
      `not the RBAC filter: ${JSON.stringify(t.details)}`,
    );
  });

  it('a certificate for ns/foo/sa/client from another root is refused in the handshake, not authorized', async (tc) => {
    // Same bootstrap and trust as the client peer, which gets through; only the issuer differs.
    const t = await calls(peer('forger'), { target: target('secure'), path: ECHO_PATHS.whoami, secure: true, deadlineMs: 15_000 });
    tc.diagnostic(JSON.stringify(t.details));
    assert.deepEqual({ ok: t.ok, errors: t.errors }, { ok: 0, errors: { [UNAVAILABLE]: 20 } }, withLogs(JSON.stringify(t), peer('forger')));
  });

  it('DENY on /echo.Echo/Secret blocks that method only, for the allowed client too', async () => {
    const client = peer('client');
    const secret = await calls(client, { target: target('secure'), path: ECHO_PATHS.secret, secure: true });
    assert.deepEqual({ ok: secret.ok, errors: secret.errors }, { ok: 0, errors: { [PERMISSION_DENIED]: 20 } }, JSON.stringify(secret));
    const whoami = await calls(client, { target: target('secure'), path: ECHO_PATHS.whoami, secure: true });
    assert.deepEqual(whoami.peers, { [CLIENT_ID]: 20 }, JSON.stringify(whoami));
  });

  it("match_subject_alt_names is enforced: a server whose certificate is not the endpoints' account is refused", async () => {
    const t = await calls(peer('client'), { target: target('impostor'), path: ECHO_PATHS.whoami, secure: true, deadlineMs: 15_000 });
    assert.deepEqual({ ok: t.ok, errors: t.errors }, { ok: 0, errors: { [UNAVAILABLE]: 20 } }, withLogs(JSON.stringify(t), peer('client')));
    assert.ok(
      t.details.every((d) => d.includes('No matching subject alternative name')),
      `not the SAN check: ${JSON.stringify(t.details)}`,
    );
  });

  it('PERMISSIVE serves plaintext: a client without TLS and one with xDS credentials but no ISTIO_MUTUAL both get through', async () => {
    for (const [who, secure] of [
      ['other', false],
      ['client', true],
    ] as const) {
      const t = await calls(peer(who), { target: target('open', 8080), path: ECHO_PATHS.whoami, secure, deadlineMs: 15_000 });
      assert.deepEqual(
        { peers: t.peers, errors: t.errors },
        { peers: { plaintext: 20 }, errors: {} },
        withLogs(`${who}: ${JSON.stringify(t)}`, peer(who), peer('open')),
      );
    }
  });

  it('DISABLE (port level) serves plaintext on that port', async () => {
    const t = await calls(peer('other'), { target: target('open', 8081), path: ECHO_PATHS.whoami, secure: false, deadlineMs: 15_000 });
    assert.deepEqual(
      { peers: t.peers, errors: t.errors },
      { peers: { plaintext: 20 }, errors: {} },
      withLogs(JSON.stringify(t), peer('open')),
    );
  });

  it("every Listener and Cluster these workloads get passes Envoy's validation rules (PGV)", async () => {
    const { push } = await loadScenario(`${dir!.path}/config`);
    const gens = registerGrpcGenerators(new GeneratorRegistry());
    const req = pushRequest({ full: true, reason: 'config', start: 0 });
    const pgv = envoyValidationRegistry();
    const gen = (node: PeerNode, typeUrl: string, names: string[]): Uint8Array[] => {
      const proxy = proxyFor({ id: node.id, labels: { ...node.labels }, metadata: { GENERATOR: 'grpc', NAMESPACE: node.namespace } });
      return gens
        .lookup(proxy, typeUrl)!
        .generate(proxy, { typeUrl, names: new Set(names), wildcard: false }, push, req)
        .map((r) => r.value);
    };
    const inbound = (p: number): string => `xds.istio.io/grpc/lds/inbound/127.0.0.1:${p}`;
    const listeners = [
      ...gen(nodes.secure, TypeUrl.Listener, [inbound(ports.secure)]),
      ...gen(nodes.open, TypeUrl.Listener, [inbound(ports.permissive), inbound(ports.disable)]),
      ...gen(nodes.client, TypeUrl.Listener, [`${host('secure')}:8080`, `${host('open')}:8080`]),
    ];
    const clusters = gen(
      nodes.client,
      TypeUrl.Cluster,
      ['secure', 'impostor', 'open'].map((s) => `outbound|8080||${host(s)}`),
    );
    assert.deepEqual([listeners.length, clusters.length], [5, 3]);
    for (const l of listeners) assertValid(ListenerSchema, fromBinary(ListenerSchema, l), pgv);
    for (const c of clusters) assertValid(ClusterSchema, fromBinary(ClusterSchema, c), pgv);
  });

  it('a changed AuthorizationPolicy reaches the running XdsServer: allowing sa/other lets it through', async () => {
    const other = peer('other');
    await writeYaml(`${dir!.path}/config`, 'allow-other.yaml', [
      sec('AuthorizationPolicy', 'allow-other', {
        selector: { matchLabels: { app: 'secure-server' } },
        rules: [{ from: [{ source: { principals: [`cluster.local/ns/${NS}/sa/other`] } }] }],
      }),
    ]);
    const t = await waitFor(
      async () => {
        const r = await calls(other, { target: target('secure'), path: ECHO_PATHS.whoami, secure: true, n: 5 });
        return r.ok === 5 ? r : false;
      },
      { timeoutMs: 20_000, intervalMs: 200, description: 'sa/other allowed' },
    ).catch((err: unknown) => assert.fail(withLogs((err as Error).message, other, peer('secure'))));
    assert.deepEqual(t.peers, { [spiffeId(NS, 'other')]: 5 });
    // The DENY policy still applies to the newly allowed identity.
    const secret = await calls(other, { target: target('secure'), path: ECHO_PATHS.secret, secure: true, n: 5 });
    assert.deepEqual(secret.errors, { [PERMISSION_DENIED]: 5 }, JSON.stringify(secret));
  });
});
