/**
 * The streams auto-registration refuses, as istiod refuses them, seen by a raw ADS client: a group
 * that does not exist (FAILED_PRECONDITION), and a stream without an authenticated identity
 * (the plaintext port) while ISTIO_WORKLOAD_ENTRY_VALIDATE_IDENTITY is on. A health report from a
 * proxy with no WorkloadEntry is ignored, and its stream keeps being served.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import { AdsStream } from '../support/raw-ads-client.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { TYPE } from '../support/xds-resources.js';

const GROUP = `apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata: { name: vm, namespace: shop }
spec:
  template: { serviceAccount: vm-sa }
`;

const vmNode = (group: string): { id: string; metadata: Record<string, string> } => ({
  id: 'sidecar~10.9.0.1~vm-1.shop~shop.svc.cluster.local',
  metadata: { NAMESPACE: 'shop', AUTO_REGISTER_GROUP: group },
});

describe('auto-registration refusals', () => {
  let dir: TempDir | undefined;
  let mp: Meshpilot | undefined;
  const streams: AdsStream[] = [];

  before(async () => {
    dir = tempDir('mp-wle-refusals-');
    writeFileSync(path.join(dir.path, 'wg.yaml'), GROUP);
    mp = await startMeshpilot({ configDir: dir.path });
  });

  after(async () => {
    for (const s of streams) s.close();
    await mp?.stop();
    await dir?.remove();
  });

  const open = (group: string): AdsStream => {
    assert.ok(mp);
    const s = AdsStream.open(mp.grpcAddr, { node: vmNode(group) });
    streams.push(s);
    s.subscribe(TYPE.CDS, []);
    return s;
  };

  it('a proxy of a WorkloadGroup that does not exist is refused with FAILED_PRECONDITION', async () => {
    const end = await open('nope').ended;
    assert.equal(end.code, grpc.status.FAILED_PRECONDITION);
    assert.match(end.details, /cannot find WorkloadGroup shop\/nope/);
  });

  it('a stream without a verified identity may not register (the plaintext port)', async () => {
    const end = await open('vm').ended;
    assert.equal(end.code, grpc.status.PERMISSION_DENIED);
    assert.equal(end.details, 'registration of WorkloadEntry requires a verified identity');
  });

  it('a health report of a proxy without a WorkloadEntry is ignored and its stream served', async () => {
    assert.ok(mp);
    const s = AdsStream.open(mp.grpcAddr, {
      node: { id: 'sidecar~10.9.0.2~app-1.shop~shop.svc.cluster.local', metadata: { NAMESPACE: 'shop' } },
    });
    streams.push(s);
    s.subscribe(TYPE.CDS, []);
    s.ack((await s.next(TYPE.CDS)).resp);
    s.send({ typeUrl: 'type.googleapis.com/istio.v1.HealthInformation', errorDetail: { code: 13, message: 'down' } });
    await mp.waitForLog((l) => l.raw.includes('health report from a proxy without a WorkloadEntry ignored'), {
      description: 'the report ignored',
    });
    assert.ok(s.isOpen());
    assert.equal(s.history.filter((r) => r.resp.typeUrl === 'type.googleapis.com/istio.v1.HealthInformation').length, 0, 'never answered');
  });
});
