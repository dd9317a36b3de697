/**
 * A small ambient mesh from a config directory, served by a real meshpilot process to the real
 * ztunnel (dedicated mode, test/support/ztunnel.ts): two ambient WorkloadEntries behind a
 * ServiceEntry, a plain Service-less WorkloadEntry, and an AuthorizationPolicy, so ztunnel's
 * /config_dump holds workloads, services, policies and (once fetched) its certificate.
 *
 * Used by the meshctl ztunnel-config e2e test and by scripts/capture-ztunnel-config-dump.ts,
 * which commits one dump under testdata/meshctl/ztunnel-config/.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { startMeshpilot, type Meshpilot } from './meshpilot-process.js';
import { freePort } from './ports.js';
import { tempDir, type TempDir } from './temp-dir.js';
import { writeYaml } from './yaml-files.js';
import { startZtunnel, type Ztunnel, type ZtunnelWorkload } from './ztunnel.js';

const ISSUER = 'https://issuer.ztunnel-mesh.test';

/** The workload ztunnel serves (dedicated mode): the WorkloadEntry shop/vm-1. */
export const ZTUNNEL_MESH_WORKLOAD: ZtunnelWorkload = { namespace: 'shop', pod: 'vm-1', serviceAccount: 'vm-sa', ip: '10.44.0.21' };
export const ZTUNNEL_MESH_IDENTITY = 'spiffe://cluster.local/ns/shop/sa/vm-sa';

export const workloadEntry = (name: string, address: string, sa: string, labels: Record<string, string>): Record<string, unknown> => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'WorkloadEntry',
  metadata: { name, namespace: 'shop', labels: { 'istio.io/dataplane-mode': 'ambient' } },
  spec: { address, labels, serviceAccount: sa },
});

/** The config: what meshpilot sends ztunnel. */
export const ZTUNNEL_MESH_CONFIG: readonly Record<string, unknown>[] = [
  {
    apiVersion: 'networking.istio.io/v1',
    kind: 'ServiceEntry',
    metadata: { name: 'vms', namespace: 'shop' },
    spec: {
      hosts: ['vms.shop.example'],
      addresses: ['240.0.0.10'],
      ports: [{ number: 80, name: 'http', protocol: 'HTTP', targetPort: 8080 }],
      resolution: 'STATIC',
      location: 'MESH_INTERNAL',
      workloadSelector: { labels: { app: 'vm' } },
    },
  },
  workloadEntry('vm-1', '10.44.0.21', 'vm-sa', { app: 'vm' }),
  workloadEntry('vm-2', '10.44.0.22', 'vm-sa', { app: 'vm' }),
  workloadEntry('db-1', '10.44.0.31', 'db-sa', { app: 'db' }),
  {
    apiVersion: 'security.istio.io/v1',
    kind: 'AuthorizationPolicy',
    metadata: { name: 'allow-vms', namespace: 'shop' },
    spec: {
      selector: { matchLabels: { app: 'db' } },
      action: 'ALLOW',
      rules: [{ from: [{ source: { principals: ['cluster.local/ns/shop/sa/vm-sa'] } }] }],
    },
  },
];

export interface ZtunnelMesh {
  /** meshpilot's config directory (files written there reach ztunnel). */
  readonly configDir: string;
  readonly meshpilot: Meshpilot;
  readonly ztunnel: Ztunnel;
  stop(): Promise<void>;
}

/** Starts meshpilot (ambient on) with ZTUNNEL_MESH_CONFIG and a ztunnel for ZTUNNEL_MESH_WORKLOAD; waits until it is ready. */
export async function startZtunnelMesh(): Promise<ZtunnelMesh> {
  const dir: TempDir = tempDir('meshpilot-ztunnel-mesh-');
  let mp: Meshpilot | undefined;
  let zt: Ztunnel | undefined;
  const stop = async (): Promise<void> => {
    await zt?.stop();
    await mp?.stop();
    await dir.remove();
  };
  try {
    const key = await generateKeyPair('ES256');
    const jwks = path.join(dir.path, 'jwks.json');
    await writeFile(jwks, JSON.stringify({ keys: [{ ...(await exportJWK(key.publicKey)), kid: 'zt', alg: 'ES256' }] }));
    const configDir = path.join(dir.path, 'config');
    await mkdir(configDir);
    await writeYaml(configDir, 'mesh.yaml', ZTUNNEL_MESH_CONFIG);
    const secureAddr = `127.0.0.1:${await freePort()}`;
    mp = await startMeshpilot({
      configDir,
      args: ['--secureGRPCAddr', secureAddr, '--caDir', path.join(dir.path, 'ca')],
      env: {
        JWT_RULE: JSON.stringify({ issuer: ISSUER, audiences: ['istio-ca'], jwks_uri: `file://${jwks}` }),
        ROOT_CA_DIR: path.join(dir.path, 'no-cacerts'),
        PILOT_ENABLE_AMBIENT: 'true',
      },
    });
    const w = ZTUNNEL_MESH_WORKLOAD;
    const token = await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: 'zt' })
      .setIssuer(ISSUER)
      .setAudience('istio-ca')
      .setSubject(`system:serviceaccount:${w.namespace}:${w.serviceAccount}`)
      .setIssuedAt()
      .setExpirationTime('10m')
      .sign(key.privateKey);
    const rootPem = await readFile(path.join(dir.path, 'ca', 'root-cert.pem'), 'utf8');
    // NODE_NAME empty: a WorkloadEntry has no node, and ztunnel looks for its own workload on its node.
    zt = await startZtunnel({ secureAddress: secureAddr, rootPem, token, workload: w, env: { NODE_NAME: '' } });
    await zt.waitForCertificate(ZTUNNEL_MESH_IDENTITY);
    return { configDir, meshpilot: mp, ztunnel: zt, stop };
  } catch (err) {
    const logs = `--- meshpilot ---\n${mp?.tail(20) ?? ''}\n--- ztunnel ---\n${zt?.tail(20) ?? ''}`;
    await stop();
    throw new Error(`${(err as Error).message}\n${logs}`, { cause: err });
  }
}
