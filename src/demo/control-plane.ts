/**
 * meshpilot discovery as the demo runs it: on the user's config directory (watched, so an edit
 * applies at once), its CA state in the demo's own temp directory (never in the config directory),
 * callers of the CA authenticated by a JWT the demo signs (JWT_RULE with an inline key), and
 * auto mTLS off — the demo's apps have no sidecar to terminate it.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey } from 'jose';
import { startChild, until, running, type Child } from './processes.js';

const ISSUER = 'https://demo.meshpilot.local';

export interface ControlPlaneAddrs {
  readonly grpcAddr: string;
  readonly secureGRPCAddr: string;
  readonly httpAddr: string;
  readonly monitoringAddr: string;
}

export interface ControlPlane {
  readonly child: Child;
  readonly addrs: ControlPlaneAddrs;
  readonly caDir: string;
  /** A token the CA accepts for `system:serviceaccount:<ns>:<sa>`. */
  token(namespace: string, serviceAccount: string): Promise<string>;
}

/** How to run this same CLI again: node, its loader flags (tsx in a checkout), the entry script. */
export function selfCommand(): { command: string; args: string[] } {
  const script = process.argv[1];
  if (script === undefined) throw new Error('cannot tell where the meshpilot CLI is');
  return { command: process.execPath, args: [...process.execArgv, script] };
}

/** Child env without the caller's proxy/xDS settings, which would change the children's identity. */
export function childEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const k of Object.keys(env))
    if (k === 'NODE_TEST_CONTEXT' || k.startsWith('GRPC_XDS') || k.startsWith('ISTIO_META') || k === 'JWT_RULE') delete env[k];
  return { ...env, ...extra };
}

export async function startControlPlane(
  configDir: string,
  workDir: string,
  addrs: ControlPlaneAddrs,
  onLine?: (line: string) => void,
): Promise<ControlPlane> {
  const keys = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(keys.publicKey)), kid: 'demo', alg: 'ES256', use: 'sig' };
  const meshFile = join(workDir, 'mesh.yaml');
  writeFileSync(meshFile, '# the demo apps run without sidecars: plaintext to them\nenableAutoMtls: false\n');
  const caDir = join(workDir, 'ca');
  const self = selfCommand();
  const child = startChild(
    'meshpilot discovery',
    self.command,
    [
      ...self.args,
      'discovery',
      '--configDir',
      configDir,
      '--caDir',
      caDir,
      '--meshConfig',
      meshFile,
      '--grpcAddr',
      addrs.grpcAddr,
      '--secureGRPCAddr',
      addrs.secureGRPCAddr,
      '--httpAddr',
      addrs.httpAddr,
      '--monitoringAddr',
      addrs.monitoringAddr,
      '--httpsAddr',
      '',
      '--shutdownDuration',
      '2s',
    ],
    { env: childEnv({ JWT_RULE: JSON.stringify({ issuer: ISSUER, audiences: ['istio-ca'], jwks: { keys: [jwk] } }) }) },
    onLine,
  );
  await until(
    async () => {
      if (!running(child))
        throw new Error(`meshpilot discovery exited (${child.process.exitCode ?? child.process.signalCode})\n${child.tail()}`);
      try {
        return (await fetch(`http://${addrs.httpAddr}/ready`)).ok;
      } catch {
        return false;
      }
    },
    'meshpilot discovery to be ready',
    30_000,
    () => child.tail(),
  );
  const sign = (sub: string, key: CryptoKey): Promise<string> =>
    new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: 'demo' })
      .setIssuer(ISSUER)
      .setAudience('istio-ca')
      .setSubject(sub)
      .setIssuedAt()
      .setExpirationTime('24h')
      .sign(key);
  return { child, addrs, caDir, token: (ns, sa) => sign(`system:serviceaccount:${ns}:${sa}`, keys.privateKey) };
}
