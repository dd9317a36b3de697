/**
 * `meshctl ztunnel-config --ztunnel-admin` against the real ztunnel (test/support/ztunnel.ts)
 * served by a real meshpilot process from a config directory (test/support/ztunnel-mesh.ts):
 * the tables list the WorkloadEntries, the ServiceEntry and the AuthorizationPolicy meshpilot
 * sent, and the certificate meshpilot's CA issued. Skips without the ztunnel binary or root.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { runCli } from '../../src/meshctl/cli.js';
import type { CliIO } from '../../src/meshctl/io.js';
import { waitFor } from '../support/wait.js';
import { writeYaml } from '../support/yaml-files.js';
import { startZtunnelMesh, workloadEntry, ZTUNNEL_MESH_IDENTITY, type ZtunnelMesh } from '../support/ztunnel-mesh.js';
import { ztunnelSkipReason } from '../support/ztunnel.js';

const skip = ztunnelSkipReason();
let mesh: ZtunnelMesh | undefined;

async function meshctl(argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const io: CliIO = {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    env: {},
    cwd: process.cwd(),
  };
  const code = await runCli(argv, io, { proxyCommands: false });
  return { code, stdout, stderr };
}

/** A table's rows as cells (split on runs of spaces; no cell here holds a space). */
const rows = (table: string): string[][] =>
  table
    .trimEnd()
    .split('\n')
    .map((l) => l.trim().split(/ +/));

describe('meshctl ztunnel-config against the real ztunnel', { skip }, () => {
  before(async () => {
    mesh = await startZtunnelMesh();
  });

  after(async () => {
    await mesh?.stop();
  });

  it('workloads: the WorkloadEntries meshpilot sent, with their addresses and protocol', async () => {
    const r = await meshctl(['ztunnel-config', 'workloads', '--ztunnel-admin', mesh!.ztunnel.ports.admin]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.split('\n')[0], 'NAMESPACE POD NAME ADDRESS    NODE WAYPOINT PROTOCOL');
    assert.deepEqual(rows(r.stdout).slice(1), [
      ['shop', 'db-1', '10.44.0.31', 'None', 'HBONE'],
      ['shop', 'vm-1', '10.44.0.21', 'None', 'HBONE'],
      ['shop', 'vm-2', '10.44.0.22', 'None', 'HBONE'],
    ]);
  });

  it("services, policies and the certificate from meshpilot's CA", async () => {
    const admin = mesh!.ztunnel.ports.admin;
    const svc = await meshctl(['zc', 'services', '--ztunnel-admin', admin]);
    assert.deepEqual(rows(svc.stdout).slice(1), [['shop', 'vms', '240.0.0.10', 'None', '2/2']]);
    const pol = await meshctl(['zc', 'policies', '--ztunnel-admin', admin]);
    assert.deepEqual(rows(pol.stdout).slice(1), [['shop', 'allow-vms', 'Allow', 'WorkloadSelector']]);
    const certs = await meshctl(['zc', 'certificates', '--ztunnel-admin', `http://${admin}`]);
    const [leaf, root] = rows(certs.stdout).slice(1);
    assert.deepEqual(leaf?.slice(0, 4), [ZTUNNEL_MESH_IDENTITY, 'Leaf', 'Available', 'true']);
    assert.deepEqual(root?.slice(0, 4), [ZTUNNEL_MESH_IDENTITY, 'Root', 'Available', 'true']);
  });

  it('a workload added to the config directory shows up in the next dump', async () => {
    // What ztunnel lists follows meshpilot's config, not a fixture of the test.
    await writeYaml(mesh!.configDir, 'more.yaml', [workloadEntry('vm-3', '10.44.0.23', 'vm-sa', { app: 'vm' })]);
    const listed = await waitFor(
      async () => {
        const r = await meshctl(['zc', 'workloads', '--ztunnel-admin', mesh!.ztunnel.ports.admin, '--address', '10.44.0.23', '-o', 'json']);
        return (JSON.parse(r.stdout) as { uid: string; serviceAccount: string }[])[0];
      },
      { timeoutMs: 15_000, description: 'vm-3 in ztunnel-config workloads' },
    );
    assert.equal(listed.uid, 'Kubernetes/networking.istio.io/WorkloadEntry/shop/vm-3');
    assert.equal(listed.serviceAccount, 'vm-sa');
    const svc = await meshctl(['zc', 'services', '--ztunnel-admin', mesh!.ztunnel.ports.admin]);
    assert.deepEqual(rows(svc.stdout).slice(1), [['shop', 'vms', '240.0.0.10', 'None', '3/3']]);
  });
});
