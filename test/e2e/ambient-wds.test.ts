/**
 * Ambient's workload discovery against the real server process, from a config directory (no
 * Kubernetes): a raw Delta client acting as a ztunnel subscribes by wildcard to
 * istio.workload.Address and istio.security.Authorization and gets the WorkloadEntries and
 * ServiceEntries as Workloads and Services; one WorkloadEntry added sends that one Address, its
 * removal sends its name as removed, a VirtualService or Sidecar edit sends nothing, and a SotW
 * request for Address ends the stream with an error. With AMBIENT_ENABLE_DRY_RUN_AUTHORIZATION_POLICY
 * a dry-run AuthorizationPolicy is sent marked dryRun and listed by the workload it selects.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { fromBinary } from '@bufbuild/protobuf';
import * as grpc from '@grpc/grpc-js';
import { AuthorizationSchema } from '../../src/gen/workloadapi/security/authorization_pb.js';
import { AddressSchema, TunnelProtocol, type Address } from '../../src/gen/workloadapi/workload_pb.js';
import { startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import { AdsStream } from '../support/raw-ads-client.js';
import { DeltaStream, type DeltaReceived } from '../support/raw-delta-client.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { quietWindow } from '../support/wait.js';
import { removeFile, writeYaml } from '../support/yaml-files.js';

const ADDRESS = 'type.googleapis.com/istio.workload.Address';
const AUTHORIZATION = 'type.googleapis.com/istio.security.Authorization';
const QUIET_MS = 1500;

const ZTUNNEL = {
  id: 'ztunnel~10.0.0.9~ztunnel-x1.istio-system~istio-system.svc.cluster.local',
  metadata: { NAME: 'ztunnel-x1', NAMESPACE: 'istio-system', INSTANCE_IPS: '10.0.0.9', NODE_NAME: 'node-1' },
};

const serviceEntry = {
  apiVersion: 'networking.istio.io/v1',
  kind: 'ServiceEntry',
  metadata: { name: 'vms', namespace: 'shop' },
  spec: {
    hosts: ['vms.shop.example'],
    addresses: ['240.0.0.10'],
    ports: [{ number: 80, name: 'http', protocol: 'HTTP' }],
    resolution: 'STATIC',
    location: 'MESH_INTERNAL',
    workloadSelector: { labels: { app: 'vm' } },
  },
};

const workloadEntry = (name: string, address: string): Record<string, unknown> => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'WorkloadEntry',
  metadata: { name, namespace: 'shop', labels: { 'istio.io/dataplane-mode': 'ambient' } },
  spec: { address, labels: { app: 'vm' }, serviceAccount: 'vm-sa' },
});

const virtualService = (timeout: string): Record<string, unknown> => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'VirtualService',
  metadata: { name: 'vms', namespace: 'shop' },
  spec: { hosts: ['vms.shop.example'], http: [{ timeout, route: [{ destination: { host: 'vms.shop.example' } }] }] },
});

const uid = (name: string): string => `Kubernetes/networking.istio.io/WorkloadEntry/shop/${name}`;
const names = (r: DeltaReceived): string[] => r.resp.resources.map((x) => x.name).sort();
const decode = (r: DeltaReceived, name: string): Address => {
  const res = r.resp.resources.find((x) => x.name === name);
  assert.ok(res?.resource, `no ${name} in ${names(r).join(', ')}`);
  assert.equal(res.resource.typeUrl, ADDRESS);
  return fromBinary(AddressSchema, res.resource.value);
};

let dir: TempDir | undefined;
let mp: Meshpilot | undefined;
let ztunnel: DeltaStream | undefined;

async function quiet(s: DeltaStream, why: string): Promise<void> {
  s.drain();
  await quietWindow(QUIET_MS);
  const got = s.drain().map((r) => `${r.resp.typeUrl} +[${names(r).join(',')}] -[${r.resp.removedResources.join(',')}]`);
  assert.deepEqual(got, [], `${why}: a ztunnel got a response\n${mp?.tail(20) ?? ''}`);
}

/** Waits for the push after a config edit. */
async function edited(write: () => Promise<unknown>): Promise<void> {
  assert.ok(mp);
  const since = mp.mark();
  await write();
  await mp.waitForLog((l) => l.json?.msg === 'push', { since, description: 'a push after the edit' });
}

describe('ambient: a ztunnel over Delta ADS (file mode)', () => {
  before(async () => {
    dir = tempDir('meshpilot-ambient-');
    await writeYaml(dir.path, 'mesh.yaml', [serviceEntry, workloadEntry('vm-1', '192.168.7.1'), virtualService('5s')]);
    mp = await startMeshpilot({ configDir: dir.path, env: { PILOT_ENABLE_AMBIENT: 'true' } });
  });

  after(async () => {
    ztunnel?.close();
    const crashed = mp !== undefined && !mp.alive();
    const tail = mp?.tail(30);
    await mp?.stop();
    await dir?.remove();
    if (crashed) assert.fail(`meshpilot exited during the tests\n${tail}`);
  });

  it('answers both wildcard types: the WorkloadEntry as a Workload, the ServiceEntry as a Service', async () => {
    assert.ok(mp);
    ztunnel = DeltaStream.open(mp.grpcAddr, { node: ZTUNNEL });
    ztunnel.send({ typeUrl: ADDRESS });
    ztunnel.send({ typeUrl: AUTHORIZATION });
    const addresses = await ztunnel.next(ADDRESS);
    const policies = await ztunnel.next(AUTHORIZATION);
    assert.deepEqual(names(addresses), [uid('vm-1'), 'shop/vms.shop.example']);
    const w = decode(addresses, uid('vm-1'));
    assert.equal(w.type.case, 'workload');
    if (w.type.case === 'workload') {
      assert.deepEqual([...(w.type.value.addresses[0] ?? [])], [192, 168, 7, 1]);
      assert.equal(w.type.value.tunnelProtocol, TunnelProtocol.HBONE);
      assert.equal(w.type.value.serviceAccount, 'vm-sa');
      assert.deepEqual(Object.keys(w.type.value.services), ['shop/vms.shop.example']);
    }
    const s = decode(addresses, 'shop/vms.shop.example');
    assert.equal(s.type.case, 'service');
    assert.deepEqual(names(policies), [], 'no policies: answered empty, so the ztunnel can become ready');
    ztunnel.ack(addresses.resp);
    ztunnel.ack(policies.resp);
    await quiet(ztunnel, 'after the ACKs');
  });

  it('one WorkloadEntry added: that one Address is sent', async () => {
    assert.ok(dir && ztunnel);
    await edited(() => writeYaml(dir!.path, 'vm-2.yaml', [workloadEntry('vm-2', '192.168.7.2')]));
    const r = await ztunnel.next(ADDRESS);
    assert.deepEqual(names(r), [uid('vm-2')]);
    assert.deepEqual(r.resp.removedResources, []);
    ztunnel.ack(r.resp);
    await quiet(ztunnel, 'after the ACK');
  });

  it('a VirtualService edit does not push the ztunnel', async () => {
    assert.ok(dir && ztunnel);
    await edited(() => writeYaml(dir!.path, 'mesh.yaml', [serviceEntry, workloadEntry('vm-1', '192.168.7.1'), virtualService('7s')]));
    await quiet(ztunnel, 'after the VirtualService edit');
  });

  it('the WorkloadEntry deleted: its name is removed', async () => {
    assert.ok(dir && ztunnel);
    await edited(() => removeFile(dir!.path, 'vm-2.yaml'));
    const r = await ztunnel.next(ADDRESS);
    assert.deepEqual(names(r), []);
    assert.deepEqual(r.resp.removedResources, [uid('vm-2')]);
    ztunnel.ack(r.resp);
  });

  it('a reconnect with what it holds gets only the removal of a name that is gone', async () => {
    assert.ok(mp && ztunnel);
    const held = ztunnel.holdings(ADDRESS);
    assert.deepEqual(Object.keys(held).sort(), [uid('vm-1'), 'shop/vms.shop.example']);
    const again = DeltaStream.open(mp.grpcAddr, { node: { ...ZTUNNEL, id: ZTUNNEL.id.replace('ztunnel-x1', 'ztunnel-x2') } });
    try {
      again.send({ typeUrl: ADDRESS, initialVersions: { ...held, [uid('vm-gone')]: 'stale' } });
      const r = await again.next(ADDRESS);
      assert.deepEqual(names(r), [], 'what it holds unchanged is not sent again');
      assert.deepEqual(r.resp.removedResources, [uid('vm-gone')]);
    } finally {
      again.close();
    }
  });

  it('a SotW request for Address ends the stream with INVALID_ARGUMENT', async () => {
    assert.ok(mp);
    const sotw = AdsStream.open(mp.grpcAddr, { node: { ...ZTUNNEL, id: ZTUNNEL.id.replace('ztunnel-x1', 'ztunnel-sotw') } });
    try {
      sotw.send({ typeUrl: ADDRESS });
      const end = await sotw.ended;
      assert.equal(end.code, grpc.status.INVALID_ARGUMENT);
      assert.match(end.details, /Delta ADS only/);
    } finally {
      sotw.close();
    }
  });
});

const dryRunPolicy = {
  apiVersion: 'security.istio.io/v1',
  kind: 'AuthorizationPolicy',
  metadata: { name: 'dry', namespace: 'shop', annotations: { 'istio.io/dry-run': 'true' } },
  spec: { selector: { matchLabels: { app: 'vm' } }, action: 'DENY', rules: [{ from: [{ source: { namespaces: ['evil'] } }] }] },
};

describe('AMBIENT_ENABLE_DRY_RUN_AUTHORIZATION_POLICY=true: a dry-run policy reaches ztunnel marked dryRun', () => {
  let dry: Meshpilot | undefined;
  let dryDir: TempDir | undefined;

  after(async () => {
    await dry?.stop();
    await dryDir?.remove();
  });

  it('the Authorization has dryRun set and the selected workload lists it', async () => {
    dryDir = tempDir('meshpilot-ambient-dry-run-');
    await writeYaml(dryDir.path, 'mesh.yaml', [serviceEntry, workloadEntry('vm-1', '192.168.7.1'), dryRunPolicy]);
    dry = await startMeshpilot({
      configDir: dryDir.path,
      env: { PILOT_ENABLE_AMBIENT: 'true', AMBIENT_ENABLE_DRY_RUN_AUTHORIZATION_POLICY: 'true' },
    });
    const s = DeltaStream.open(dry.grpcAddr, { node: ZTUNNEL });
    try {
      s.send({ typeUrl: ADDRESS });
      s.send({ typeUrl: AUTHORIZATION });
      const addresses = await s.next(ADDRESS);
      const policies = await s.next(AUTHORIZATION);
      assert.deepEqual(names(policies), ['shop/dry']);
      const policy = fromBinary(AuthorizationSchema, policies.resp.resources[0]!.resource!.value);
      assert.equal(policy.dryRun, true);
      const w = decode(addresses, uid('vm-1'));
      assert.deepEqual(w.type.case === 'workload' ? w.type.value.authorizationPolicies : undefined, ['shop/dry']);
    } finally {
      s.close();
    }
  });
});

describe('ambient off (the default): a ztunnel is refused', () => {
  let off: Meshpilot | undefined;
  let offDir: TempDir | undefined;

  after(async () => {
    await off?.stop();
    await offDir?.remove();
  });

  it('ends its stream with PERMISSION_DENIED naming PILOT_ENABLE_AMBIENT', async () => {
    offDir = tempDir('meshpilot-ambient-off-');
    await writeYaml(offDir.path, 'mesh.yaml', [serviceEntry]);
    off = await startMeshpilot({
      configDir: offDir.path,
      env: { PILOT_ENABLE_AMBIENT: '', AMBIENT_ENABLE_DRY_RUN_AUTHORIZATION_POLICY: 'true' },
    });
    await off.waitForLog(
      (l) => l.json?.msg === 'ignoring AMBIENT_ENABLE_DRY_RUN_AUTHORIZATION_POLICY; requires PILOT_ENABLE_AMBIENT=true',
      {
        description: 'the ambient-only setting reported as ignored',
      },
    );
    const s = DeltaStream.open(off.grpcAddr, { node: ZTUNNEL });
    try {
      s.send({ typeUrl: ADDRESS });
      const end = await s.ended;
      assert.equal(end.code, grpc.status.PERMISSION_DENIED);
      assert.match(end.details, /PILOT_ENABLE_AMBIENT=true/);
    } finally {
      s.close();
    }
  });
});
