/**
 * Network gateways named by a host name, against the real server process in file mode: the
 * meshNetworks gateway of network n2 is `gw.example.test`, which meshpilot resolves itself (as
 * istiod does with RESOLVE_HOSTNAME_GATEWAYS) from a DNS server the test runs on loopback
 * (MESHPILOT_GATEWAY_DNS_SERVERS). A sidecar in n1 then reaches n2's endpoint through the resolved
 * addresses, each gateway address one endpoint; with RESOLVE_HOSTNAME_GATEWAYS=false the gateway is
 * left out and n2's endpoint is sent as it is.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ClusterLoadAssignmentSchema } from '../../src/gen/envoy/config/endpoint/v3/endpoint_pb.js';
import { startTestDnsServer, type TestDnsServer } from '../support/dns-server.js';
import { startMeshpilot, type Meshpilot } from '../support/meshpilot-process.js';
import { AdsStream } from '../support/raw-ads-client.js';
import { tempDir, type TempDir } from '../support/temp-dir.js';
import { decodeResources, endpointAddresses, TYPE } from '../support/xds-resources.js';
import { waitFor } from '../support/wait.js';
import { N1_SIDECAR, TWO_NETWORK_CLA, TWO_NETWORK_CONFIG } from '../support/two-network-service.js';
import { writeYaml } from '../support/yaml-files.js';

const CLA = TWO_NETWORK_CLA;
const MESH_NETWORKS = 'networks:\n  n2:\n    gateways:\n      - address: gw.example.test\n        port: 15443\n';

describe('network gateways named by a host name', () => {
  let dir: TempDir | undefined;
  let dns: TestDnsServer | undefined;
  const servers: Meshpilot[] = [];
  const streams: AdsStream[] = [];

  before(async () => {
    dir = tempDir('meshpilot-hostname-gateways-');
    await writeYaml(join(dir.path, 'config'), 'mesh.yaml', TWO_NETWORK_CONFIG);
    writeFileSync(join(dir.path, 'meshNetworks'), MESH_NETWORKS);
    dns = await startTestDnsServer();
    dns.zone.set('gw.example.test', ['192.0.2.52', '192.0.2.51']);
  });

  after(async () => {
    for (const s of streams) s.close();
    for (const s of servers) await s.stop();
    await dns?.close();
    await dir?.remove();
  });

  /** The endpoints of the service a sidecar in n1 gets, once `done` holds for them. */
  async function endpointsSeen(env: Record<string, string>, done: (eps: string[]) => boolean): Promise<string[]> {
    const mp = await startMeshpilot({
      configDir: join(dir!.path, 'config'),
      args: ['--meshNetworks', join(dir!.path, 'meshNetworks')],
      env: { MESHPILOT_GATEWAY_DNS_SERVERS: dns!.address, ...env },
    });
    servers.push(mp);
    const stream = AdsStream.open(mp.grpcAddr, {
      node: N1_SIDECAR,
    });
    streams.push(stream);
    stream.subscribe(TYPE.EDS, [CLA]);
    let last: string[] = [];
    await waitFor(
      async () => {
        const got = await stream.next(TYPE.EDS);
        stream.ack(got.resp);
        const cla = decodeResources(got.resp, ClusterLoadAssignmentSchema).find((c) => c.clusterName === CLA);
        last = cla ? endpointAddresses(cla) : [];
        return done(last);
      },
      { description: `the endpoints of ${CLA}`, timeoutMs: 20_000 },
    );
    return last;
  }

  it("resolves the gateway's name: the other network's endpoint is reached at each address it resolved to", async () => {
    const eps = await endpointsSeen({}, (e) => e.some((a) => a.startsWith('192.0.2.')));
    assert.deepEqual(eps, ['10.1.0.1:8080', '192.0.2.51:15443', '192.0.2.52:15443']);
    assert.ok(dns!.asked.includes('gw.example.test/1') && dns!.asked.includes('gw.example.test/28'), dns!.asked.join(', '));
  });

  it('RESOLVE_HOSTNAME_GATEWAYS=false: no gateway for n2, whose endpoint is sent as it is', async () => {
    const eps = await endpointsSeen({ RESOLVE_HOSTNAME_GATEWAYS: 'false' }, (e) => e.length > 0);
    assert.deepEqual(eps, ['10.1.0.1:8080', '10.2.0.1:8080']);
  });
});
