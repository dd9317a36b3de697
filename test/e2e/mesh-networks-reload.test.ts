/**
 * `--meshNetworks`: against the real server process in file mode, a sidecar in network n1 watches a
 * service with WorkloadEntries in n1 and n2. Without a gateway for n2 it gets every endpoint; once the
 * file gains a gateway, the push replaces n2's endpoint by the gateway (port 15443, weighted); an
 * invalid edit is reported with its line and changes nothing; removing the gateway restores the
 * endpoint.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ClusterLoadAssignmentSchema } from '../../src/gen/envoy/config/endpoint/v3/endpoint_pb.js';
import { startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import { AdsStream } from '../support/raw-ads-client.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { decodeResources, endpointAddresses, TYPE } from '../support/xds-resources.js';
import { N1_SIDECAR, TWO_NETWORK_CLA, TWO_NETWORK_CONFIG } from '../support/two-network-service.js';
import { writeYaml } from '../support/yaml-files.js';

const CLA = TWO_NETWORK_CLA;
const WITH_GATEWAY = 'networks:\n  n2:\n    gateways:\n      - address: 192.0.2.2\n        port: 15443\n';

describe('--meshNetworks reload', () => {
  let dir: TempDir | undefined;
  let mp: Meshpilot | undefined;
  let stream: AdsStream | undefined;
  let file = '';

  before(async () => {
    dir = tempDir('meshpilot-mesh-networks-');
    const config = join(dir.path, 'config');
    await writeYaml(config, 'mesh.yaml', TWO_NETWORK_CONFIG);
    file = join(dir.path, 'meshNetworks');
    writeFileSync(file, 'networks: {}\n');
    mp = await startMeshpilot({ configDir: config, args: ['--meshNetworks', file] });
  });

  after(async () => {
    stream?.close();
    await mp?.stop();
    await dir?.remove();
  });

  const nextEndpoints = async (): Promise<string[]> => {
    const got = await stream!.next(TYPE.EDS);
    stream!.ack(got.resp);
    const cla = decodeResources(got.resp, ClusterLoadAssignmentSchema).find((c) => c.clusterName === CLA);
    assert.ok(cla, `no ${CLA} in the EDS response`);
    return endpointAddresses(cla);
  };

  it("a gateway added to the file replaces the other network's endpoint; an invalid edit changes nothing; removing it restores", async () => {
    assert.ok(mp);
    stream = AdsStream.open(mp.grpcAddr, {
      node: N1_SIDECAR,
    });
    stream.subscribe(TYPE.EDS, [CLA]);
    assert.deepEqual(await nextEndpoints(), ['10.1.0.1:8080', '10.2.0.1:8080']);

    let since = mp.mark();
    writeFileSync(file, WITH_GATEWAY);
    await mp.waitForLog((l) => l.json?.msg === 'push', { since, description: 'the push of the meshNetworks edit' });
    assert.deepEqual(await nextEndpoints(), ['10.1.0.1:8080', '192.0.2.2:15443']);

    since = mp.mark();
    writeFileSync(file, WITH_GATEWAY.replace('15443', '99999'));
    const error = await mp.waitForLog((l) => /invalid mesh networks/.test(l.raw), { since, description: 'the error for the bad edit' });
    assert.match(error.raw, /line 5: networks\[n2\]\.gateways\[0\]\.port: port number 99999 must be in the range 1\.\.65535/);

    writeFileSync(file, 'networks: {}\n');
    assert.deepEqual(await nextEndpoints(), ['10.1.0.1:8080', '10.2.0.1:8080']);
  });
});
