/**
 * meshpilot discovery with its CA on a known secure port, authenticating callers by JWT_RULE with
 * an inline JWKS: tests mint tokens for any `system:serviceaccount:<ns>:<sa>` subject.
 */
import { access, readFile } from 'node:fs/promises';
import path from 'node:path';
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey } from 'jose';
import { startMeshpilot, type Meshpilot, type StartOptions } from './meshpilot-process.js';
import { freePorts } from './ports.js';
import { waitFor } from './wait.js';

export const TEST_JWT_ISSUER = 'https://issuer.meshpilot.test';

export interface JwtCaMeshpilot {
  readonly mp: Meshpilot;
  /** `127.0.0.1:port` of the TLS xDS + CA server. */
  readonly secureAddr: string;
  readonly rootPem: string;
  readonly rootFile: string;
  /** A token the CA accepts for `system:serviceaccount:<ns>:<sa>`. */
  token(namespace: string, serviceAccount: string): Promise<string>;
  /** Same claims, signed by a key the CA does not know. */
  forgedToken(namespace: string, serviceAccount: string): Promise<string>;
}

const sign = (sub: string, key: CryptoKey): Promise<string> =>
  new SignJWT({})
    .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
    .setIssuer(TEST_JWT_ISSUER)
    .setAudience('istio-ca')
    .setSubject(sub)
    .setIssuedAt()
    .setExpirationTime('1h')
    .sign(key);

/**
 * Starts meshpilot on `configDir` with its CA state in `caDir`; `start` adds env and arguments,
 * `secureAddr` reuses an address (a restart that its clients find where they left it).
 */
export async function startJwtCaMeshpilot(
  configDir: string,
  caDir: string,
  start: Pick<StartOptions, 'env' | 'args' | 'listenHost'> & { secureAddr?: string } = {},
): Promise<JwtCaMeshpilot> {
  const keys = await generateKeyPair('ES256');
  const forger = await generateKeyPair('ES256');
  const jwk = { ...(await exportJWK(keys.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
  const secureAddr = start.secureAddr ?? `127.0.0.1:${((await freePorts(1)) as [number])[0]}`;
  const mp = await startMeshpilot({
    configDir,
    env: { JWT_RULE: JSON.stringify({ issuer: TEST_JWT_ISSUER, audiences: ['istio-ca'], jwks: { keys: [jwk] } }), ...start.env },
    args: ['--secureGRPCAddr', secureAddr, '--caDir', caDir, ...(start.args ?? [])],
    ...(start.listenHost !== undefined ? { listenHost: start.listenHost } : {}),
  });
  const rootFile = path.join(caDir, 'root-cert.pem');
  await waitFor(
    () =>
      access(rootFile).then(
        () => true,
        () => false,
      ),
    { description: 'the CA root file', timeoutMs: 20_000 },
  );
  return {
    mp,
    secureAddr,
    rootFile,
    rootPem: await readFile(rootFile, 'utf8'),
    token: (ns, sa) => sign(`system:serviceaccount:${ns}:${sa}`, keys.privateKey),
    forgedToken: (ns, sa) => sign(`system:serviceaccount:${ns}:${sa}`, forger.privateKey),
  };
}
