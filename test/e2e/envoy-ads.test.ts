/**
 * Envoy sidecar config over the wire: Envoy-style nodes (no GENERATOR metadata) against a meshpilot process on
 * the bookinfo scenario. A sidecar subscribes as Envoy does (LDS + CDS wildcard, then RDS and EDS
 * by name) and ACKs; a VirtualService edit reaches its RDS; a router gets its gateway listeners and
 * the `credentialName` certificate over SDS.
 */
import assert from 'node:assert/strict';
import { cp, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { SecretSchema } from '../../src/gen/envoy/extensions/transport_sockets/tls/v3/secret_pb.js';
import { startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import { AdsStream, type AdsNode } from '../support/raw-ads-client.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { rdsNames } from '../support/scenario.js';
import { clusterEdsName, decodeResources, endpointAddresses, SCHEMA_BY_TYPE, TYPE } from '../support/xds-resources.js';
import { writeFileAtomic } from '../support/yaml-files.js';
import { BOOKINFO_DIR, BOOKINFO_PROXIES } from '../scenarios/bookinfo-fixture.js';

const SDS_TYPE = 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret';

let dir: TempDir | undefined;
let mp: Meshpilot | undefined;
const streams: AdsStream[] = [];

function nodeOf(name: keyof typeof BOOKINFO_PROXIES): AdsNode {
  const spec = BOOKINFO_PROXIES[name]!;
  const ns = spec.id.split('~')[3]!.split('.')[0]!;
  return {
    id: spec.id,
    metadata: {
      NAMESPACE: ns,
      LABELS: spec.labels ?? {},
      CLUSTER_ID: 'Kubernetes',
      ISTIO_VERSION: '1.28.0',
      INTERCEPTION_MODE: 'REDIRECT',
    },
  };
}

function open(node: AdsNode): AdsStream {
  assert.ok(mp);
  const s = AdsStream.open(mp.grpcAddr, { node });
  streams.push(s);
  return s;
}

const withLogs = (msg: string): string => `${msg}\n--- meshpilot stderr tail ---\n${mp?.tail(25) ?? '(not running)'}`;

describe('Envoy sidecar and router over ADS (bookinfo)', () => {
  before(async () => {
    dir = tempDir();
    await cp(join(BOOKINFO_DIR, 'config'), dir.path, { recursive: true });
    mp = await startMeshpilot({ configDir: dir.path });
  });

  after(async () => {
    for (const s of streams) s.close();
    await mp?.stop();
    await dir?.remove();
  });

  it('a sidecar syncs LDS → RDS, CDS → EDS, and a VirtualService edit reaches its RDS', async () => {
    const s = open(nodeOf('productpage'));
    s.subscribe(TYPE.LDS, []);
    const lds = await s.next(TYPE.LDS);
    s.ack(lds.resp);
    const listeners = decodeResources(lds.resp, SCHEMA_BY_TYPE[TYPE.LDS]);
    assert.deepEqual(
      listeners.map((l) => l.name).sort(),
      ['0.0.0.0_80', '0.0.0.0_9080', '10.0.0.14_3306', '10.0.0.15_443', '10.0.2.1_443', 'virtualInbound', 'virtualOutbound'].sort(),
      withLogs('listeners'),
    );
    const routeNames = [...rdsNames(listeners)].sort();
    assert.deepEqual(routeNames, ['80', '9080']);

    s.subscribe(TYPE.CDS, []);
    const cds = await s.next(TYPE.CDS);
    s.ack(cds.resp);
    const clusters = decodeResources(cds.resp, SCHEMA_BY_TYPE[TYPE.CDS]);
    assert.ok(clusters.some((c) => c.name === 'outbound|9080|v2|reviews.bookinfo.svc.cluster.local'));
    assert.ok(!clusters.some((c) => c.name.includes('legacy.other')), 'the Sidecar scope keeps other namespaces out');
    const edsNames = clusters.flatMap((c) => clusterEdsName(c) ?? []).sort();

    s.subscribe(TYPE.RDS, routeNames);
    const rds = await s.next(TYPE.RDS);
    s.ack(rds.resp);
    assert.deepEqual(
      decodeResources(rds.resp, SCHEMA_BY_TYPE[TYPE.RDS])
        .map((r) => r.name)
        .sort(),
      routeNames,
    );

    s.subscribe(TYPE.EDS, edsNames);
    const eds = await s.next(TYPE.EDS);
    s.ack(eds.resp);
    const byName = new Map(decodeResources(eds.resp, SCHEMA_BY_TYPE[TYPE.EDS]).map((c) => [c.clusterName, c]));
    assert.deepEqual(endpointAddresses(byName.get('outbound|9080|v2|reviews.bookinfo.svc.cluster.local')!), ['10.1.0.22:9080']);

    // Send jason to v3 instead of v2: the 9080 route config changes, and arrives.
    const file = join(dir!.path, 'traffic.yaml');
    const text = await readFile(file, 'utf8');
    const edited = text.replace('- destination: {host: reviews, subset: v2}', '- destination: {host: reviews, subset: v3}');
    assert.notEqual(edited, text, 'the edit must change the file');
    await writeFileAtomic(dir!.path, 'traffic.yaml', edited);
    for (;;) {
      const r = await s.next(TYPE.RDS, 15_000);
      s.ack(r.resp);
      const rc = decodeResources(r.resp, SCHEMA_BY_TYPE[TYPE.RDS]).find((x) => x.name === '9080');
      const vh = rc?.virtualHosts.find((v) => v.name === 'reviews.bookinfo.svc.cluster.local:9080');
      const jason = vh?.routes.find((x) => x.name === 'jason');
      if (
        jason?.action.case === 'route' &&
        jason.action.value.clusterSpecifier.value === 'outbound|9080|v3|reviews.bookinfo.svc.cluster.local'
      )
        break;
    }
  });

  it('a router gets the gateway listeners and its credential over SDS', async () => {
    const s = open(nodeOf('ingress-gateway'));
    s.subscribe(TYPE.LDS, []);
    const lds = await s.next(TYPE.LDS);
    s.ack(lds.resp);
    assert.deepEqual(
      decodeResources(lds.resp, SCHEMA_BY_TYPE[TYPE.LDS])
        .map((l) => l.name)
        .sort(),
      ['0.0.0.0_8080', '0.0.0.0_8443'],
      withLogs('gateway listeners'),
    );
    s.subscribe(SDS_TYPE, ['kubernetes://bookinfo-cert', 'kubernetes://missing-cert']);
    const sds = await s.next(SDS_TYPE);
    s.ack(sds.resp);
    const secrets = decodeResources(sds.resp, SecretSchema);
    // The missing credential is not invented: Envoy keeps warming that listener until it exists,
    // and the operator is told which one.
    assert.deepEqual(
      secrets.map((x) => x.name),
      ['kubernetes://bookinfo-cert'],
    );
    await mp!.waitForLog(
      (l) => l.json?.msg === 'gateway credential not found or unusable' && l.json.resource === 'kubernetes://missing-cert',
      { description: 'missing credential warning' },
    );
    const cert = secrets[0]!.type;
    assert.equal(cert.case, 'tlsCertificate');
    const chain = cert.case === 'tlsCertificate' ? cert.value.certificateChain?.specifier : undefined;
    assert.ok(chain?.case === 'inlineBytes' && new TextDecoder().decode(chain.value).includes('BEGIN CERTIFICATE'));
  });
});
