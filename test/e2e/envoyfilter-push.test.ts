/**
 * EnvoyFilter over the wire: a meshpilot process on the EnvoyFilter base mesh,
 * three Envoy-style ADS streams. An EnvoyFilter written into the config directory reaches the
 * sidecar it selects (its CDS carries the patched cluster), not a sidecar of another namespace
 * (no push at all) nor the gateway (nothing, or its unpatched clusters). A
 * broken edit of it is reported for the selected proxy and the cluster goes back to unpatched.
 */
import assert from 'node:assert/strict';
import { cp } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Cluster } from '../../src/gen/envoy/config/cluster/v3/cluster_pb.js';
import { startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import { AdsStream, type AdsNode, type Received } from '../support/raw-ads-client.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { decodeResources, SCHEMA_BY_TYPE, TYPE } from '../support/xds-resources.js';
import { removeFile, writeFileAtomic } from '../support/yaml-files.js';
import { EF_BASE } from '../scenarios/envoyfilter/envoyfilter-fixture.js';

const DB = 'outbound|3306||db.shop.svc.cluster.local';
const node = (id: string, ns: string, labels: Record<string, string>): AdsNode => ({
  id,
  metadata: { NAMESPACE: ns, LABELS: labels, ISTIO_VERSION: '1.31.0' },
});
const WEB = node('sidecar~10.1.0.10~web-1.shop~shop.svc.cluster.local', 'shop', { app: 'web' });
const OTHER = node('sidecar~10.9.0.1~tool-1.other~other.svc.cluster.local', 'other', { app: 'web' });
const GATEWAY = node('router~10.2.0.1~istio-ingressgateway-1.istio-system~istio-system.svc.cluster.local', 'istio-system', {
  istio: 'ingressgateway',
});

const envoyFilter = (value: string): string => `apiVersion: networking.istio.io/v1alpha3
kind: EnvoyFilter
metadata: {name: db-buffer, namespace: shop}
spec:
  workloadSelector:
    labels: {app: web}
  configPatches:
    - applyTo: CLUSTER
      match: {context: SIDECAR_OUTBOUND, cluster: {service: db.shop.svc.cluster.local}}
      patch: {operation: MERGE, value: ${value}}
`;

let dir: TempDir | undefined;
let mp: Meshpilot | undefined;
const streams: AdsStream[] = [];

const dbOf = (r: Received): Cluster | undefined => decodeResources(r.resp, SCHEMA_BY_TYPE[TYPE.CDS]).find((c) => c.name === DB);

async function cds(n: AdsNode): Promise<{ s: AdsStream; first: Received }> {
  const s = AdsStream.open(mp!.grpcAddr, { node: n });
  streams.push(s);
  s.subscribe(TYPE.CDS, []);
  const first = await s.next(TYPE.CDS);
  s.ack(first.resp);
  return { s, first };
}

describe('EnvoyFilter pushes (config directory, real ADS streams)', () => {
  before(async () => {
    dir = tempDir();
    await cp(join(EF_BASE, 'mesh.yaml'), join(dir.path, 'mesh.yaml'));
    mp = await startMeshpilot({ configDir: dir.path });
  });

  after(async () => {
    for (const s of streams) s.close();
    await mp?.stop();
    await dir?.remove();
  });

  it('reaches exactly the proxy it selects; a broken edit is reported for it and the cluster is sent unpatched', async () => {
    const web = await cds(WEB);
    const other = await cds(OTHER);
    const gw = await cds(GATEWAY);
    assert.equal(dbOf(web.first)?.perConnectionBufferLimitBytes, undefined);
    const logs = (): string => `--- meshpilot stderr tail ---\n${mp?.tail(25) ?? ''}`;

    await writeFileAtomic(dir!.path, 'envoyfilter.yaml', envoyFilter('{per_connection_buffer_limit_bytes: 4242}'));
    await web.s.nextMatching(TYPE.CDS, (r) => dbOf(r)?.perConnectionBufferLimitBytes === 4242, {
      describe: () => `web never got the patched cluster\n${logs()}`,
    });
    // The gateway is not selected: its clusters are unchanged, so it is sent nothing (or the same clusters).
    const gwPush = await gw.s.next(TYPE.CDS, 1500).catch(() => undefined);
    if (gwPush) assert.equal(dbOf(gwPush)?.perConnectionBufferLimitBytes, undefined, 'the gateway is not selected');
    await assert.rejects(other.s.next(TYPE.CDS, 1500), 'a proxy of another namespace is not pushed');

    await writeFileAtomic(dir!.path, 'envoyfilter.yaml', envoyFilter('{connect_timeout: -1s, per_connection_buffer_limit_bytes: 17}'));
    await web.s.nextMatching(TYPE.CDS, (r) => dbOf(r) !== undefined && dbOf(r)?.perConnectionBufferLimitBytes === undefined, {
      describe: () => `web never got the unpatched cluster back\n${logs()}`,
    });
    await mp!.waitForLog(
      (l) =>
        l.json?.msg === 'EnvoyFilter patch makes an invalid resource: sending it unpatched' &&
        l.json.envoyFilters === 'shop/db-buffer' &&
        l.json.proxy === WEB.id,
      { description: 'the broken patch reported for the web proxy' },
    );
    assert.equal(web.s.drain().filter((r) => r.resp.resources.length === 0).length, 0, 'no empty CDS response (nothing else is lost)');

    await removeFile(dir!.path, 'envoyfilter.yaml');
  });
});
