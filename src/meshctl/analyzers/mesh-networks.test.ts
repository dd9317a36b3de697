import assert from 'node:assert/strict';
import { test } from 'node:test';
import { run } from '../test-io.js';

const D = 'testdata/meshctl/analyze/mesh-networks';
const lines = async (...args: string[]): Promise<string[]> =>
  (await run(['analyze', '-A', '--meshNetworksFile', `${D}/meshnetworks.yaml`, ...args])).stdout
    .split('\n')
    .filter((l) => l.includes('[IST0126]'));

test('IST0126 for each fromRegistry that is neither built in nor a cluster of a multicluster Secret', async () => {
  assert.deepEqual(await lines(`${D}/remote-secret.yaml`), [
    `Error [IST0126] (MeshNetworks istio-system/meshnetworks ${D}/meshnetworks.yaml) Unknown service registry north-cluster in network north`,
  ]);
});

test('without the Secret the remote cluster is unknown too; a known registry is never reported', async () => {
  assert.deepEqual(await lines(`${D}/namespace.yaml`), [
    `Error [IST0126] (MeshNetworks istio-system/meshnetworks ${D}/meshnetworks.yaml) Unknown service registry west-cluster in network east`,
    `Error [IST0126] (MeshNetworks istio-system/meshnetworks ${D}/meshnetworks.yaml) Unknown service registry north-cluster in network north`,
  ]);
});
