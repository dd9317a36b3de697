/**
 * NDS over a real meshpilot: a sidecar that asks for the name table gets it (one unnamed
 * resource), gets a new one when a ServiceEntry it sees is added, changed or removed, and no new
 * one for config the table does not read (a DestinationRule). SotW, as the agent asks on Envoy's
 * stream; a Delta stream gets the same table.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { fromBinary, toJson } from '@bufbuild/protobuf';
import { NameTableSchema } from '../../src/gen/dns/proto/nds_pb.js';
import { TypeUrl } from '../../src/xds/type-urls.js';
import { startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import { AdsStream, type Received } from '../support/raw-ads-client.js';
import { DeltaStream } from '../support/raw-delta-client.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { removeFile, writeYaml } from '../support/yaml-files.js';

const node = {
  id: 'sidecar~10.0.0.5~app-0.default~default.svc.cluster.local',
  metadata: { NAMESPACE: 'default', DNS_CAPTURE: 'true', DNS_AUTO_ALLOCATE: 'true' },
};

const se = (name: string, host: string, addresses: string[]): unknown => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'ServiceEntry',
  metadata: { name, namespace: 'default' },
  spec: { hosts: [host], addresses, location: 'MESH_EXTERNAL', resolution: 'DNS', ports: [{ number: 443, name: 'tls', protocol: 'TLS' }] },
});

function tableOf(r: Received): Record<string, { ips?: string[] }> {
  assert.equal(r.resp.typeUrl, TypeUrl.NameTable);
  assert.equal(r.resp.resources.length, 1);
  return (
    (toJson(NameTableSchema, fromBinary(NameTableSchema, r.resp.resources[0]!.value)) as { table?: Record<string, { ips?: string[] }> })
      .table ?? {}
  );
}

describe('NDS pushes', () => {
  let dir: TempDir;
  let mp: Meshpilot;

  before(async () => {
    dir = tempDir('meshpilot-nds-');
    await writeYaml(dir.path, 'a.yaml', [se('a', 'a.example.com', ['192.0.2.1'])]);
    mp = await startMeshpilot({ configDir: dir.path, args: ['--caDir', `${dir.path}-ca`] });
  });
  after(async () => {
    await mp?.stop();
    await dir?.remove();
  });

  it('serves the table and pushes it again when a ServiceEntry changes, not for a DestinationRule', async () => {
    const s = new AdsStream(mp.grpcAddr, { node });
    try {
      s.subscribe(TypeUrl.NameTable, []);
      const first = await s.next(TypeUrl.NameTable);
      s.ack(first.resp);
      assert.deepEqual(tableOf(first)['a.example.com']?.ips, ['192.0.2.1']);

      await writeYaml(dir.path, 'b.yaml', [se('b', 'b.example.com', [])]);
      const added = await s.next(TypeUrl.NameTable);
      s.ack(added.resp);
      assert.match(tableOf(added)['b.example.com']?.ips?.[0] ?? '', /^240\.240\./, 'auto-allocated for a DNS_AUTO_ALLOCATE proxy');

      await writeYaml(dir.path, 'a.yaml', [se('a', 'a.example.com', ['192.0.2.2'])]);
      const changed = await s.next(TypeUrl.NameTable);
      s.ack(changed.resp);
      assert.deepEqual(tableOf(changed)['a.example.com']?.ips, ['192.0.2.2']);

      // A DestinationRule is pushed (the sidecar's clusters read it) but the table does not change.
      const mark = mp.mark();
      await writeYaml(dir.path, 'dr.yaml', [
        {
          apiVersion: 'networking.istio.io/v1',
          kind: 'DestinationRule',
          metadata: { name: 'a', namespace: 'default' },
          spec: { host: 'a.example.com' },
        },
      ]);
      await mp.waitForLog((l) => l.json?.msg === 'push' && l.raw.includes('DestinationRule'), {
        since: mark,
        description: 'the DestinationRule push',
      });
      await assert.rejects(s.next(TypeUrl.NameTable, 1000), 'no new table for a DestinationRule');

      await removeFile(dir.path, 'b.yaml');
      const removed = await s.next(TypeUrl.NameTable);
      assert.equal(tableOf(removed)['b.example.com'], undefined);
      assert.deepEqual(tableOf(removed)['a.example.com']?.ips, ['192.0.2.2']);
    } finally {
      s.close();
    }
  });

  it('a Delta stream gets the same table as one unnamed resource', async () => {
    const d = new DeltaStream(mp.grpcAddr, { node });
    try {
      d.send({ typeUrl: TypeUrl.NameTable });
      const r = await d.next(TypeUrl.NameTable);
      assert.equal(r.resp.resources.length, 1);
      assert.equal(r.resp.resources[0]!.name, '');
      const t = toJson(NameTableSchema, fromBinary(NameTableSchema, r.resp.resources[0]!.resource!.value)) as {
        table: Record<string, unknown>;
      };
      assert.ok(t.table['a.example.com']);
    } finally {
      d.close();
    }
  });
});
