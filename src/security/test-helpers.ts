/**
 * Test helpers for the security tests (not part of the public surface): CSRs made with real keys,
 * openssl runs, a log capture that can be searched for key material, temporary directories.
 */
import { execFile } from 'node:child_process';
import { webcrypto } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { createLogger, type Logger } from '../util/log.js';
import { exportPrivateKeyPem, x509, type KeyPair } from './crypto.js';

const run = promisify(execFile);

export type CsrKey = { kind: 'ec'; curve: 'P-256' | 'P-384' | 'P-521' } | { kind: 'rsa'; bits: number };

export async function testKeyPair(
  key: CsrKey = { kind: 'ec', curve: 'P-256' },
): Promise<KeyPair & { signing: webcrypto.EcdsaParams | webcrypto.Algorithm }> {
  if (key.kind === 'ec') {
    const pair = (await webcrypto.subtle.generateKey({ name: 'ECDSA', namedCurve: key.curve }, true, [
      'sign',
      'verify',
    ])) as webcrypto.CryptoKeyPair;
    return { ...pair, signing: { name: 'ECDSA', hash: 'SHA-256' } };
  }
  const params = { name: 'RSASSA-PKCS1-v1_5', modulusLength: key.bits, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' };
  const pair = (await webcrypto.subtle.generateKey(params, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  return { ...pair, signing: { name: 'RSASSA-PKCS1-v1_5' } };
}

export interface TestCsr {
  readonly csrPem: string;
  readonly keyPem: string;
  readonly keys: KeyPair;
}

/** A CSR as an agent makes one; `sans`/`cn` let a test ask for names it should not get. */
export async function makeCsr(opts: { key?: CsrKey; sans?: string[]; cn?: string } = {}): Promise<TestCsr> {
  const keys = await testKeyPair(opts.key);
  const extensions = opts.sans?.length
    ? [new x509.SubjectAlternativeNameExtension(opts.sans.map((v) => ({ type: v.includes('://') ? 'url' : 'dns', value: v })))]
    : [];
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: opts.cn ? [{ CN: [opts.cn] }] : [{ O: ['test'] }],
    keys: { privateKey: keys.privateKey, publicKey: keys.publicKey },
    signingAlgorithm: keys.signing,
    extensions,
  });
  return { csrPem: csr.toString('pem'), keyPem: await exportPrivateKeyPem(keys.privateKey), keys };
}

export async function openssl(args: string[]): Promise<{ stdout: string; stderr: string; code: number }> {
  try {
    const r = await run('openssl', args, { encoding: 'utf8' });
    return { stdout: r.stdout, stderr: r.stderr, code: 0 };
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; code?: number };
    return { stdout: e.stdout ?? '', stderr: e.stderr ?? '', code: typeof e.code === 'number' ? e.code : 1 };
  }
}

export interface TempDir {
  readonly path: string;
  file(name: string, content: string): Promise<string>;
  remove(): Promise<void>;
}

export async function tempDir(prefix = 'meshpilot-sec-'): Promise<TempDir> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  return {
    path: dir,
    async file(name, content) {
      const p = path.join(dir, name);
      await writeFile(p, content);
      return p;
    },
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

/** A logger whose every line (debug included) is kept, to assert on and to search for keys. */
export function captureLogs(): { logger: Logger; lines: string[]; assertNoPrivateKey(): void } {
  const lines: string[] = [];
  return {
    logger: createLogger({ level: 'debug', sink: (l) => lines.push(l) }),
    lines,
    assertNoPrivateKey() {
      const bad = lines.find((l) => /PRIVATE KEY/.test(l));
      if (bad) throw new Error(`a log line contains a private key: ${bad.slice(0, 120)}…`);
    },
  };
}

/** Splits a response chain into files for `openssl verify -CAfile root -untrusted chain leaf`. */
export async function writeChainFiles(
  dir: TempDir,
  chain: readonly string[],
  tag = 'x',
): Promise<{ leaf: string; untrusted: string | undefined; root: string }> {
  const leaf = await dir.file(`${tag}-leaf.pem`, chain[0]!);
  const middle = chain.slice(1, -1).join('');
  const untrusted = middle ? await dir.file(`${tag}-chain.pem`, middle) : undefined;
  const root = await dir.file(`${tag}-root.pem`, chain[chain.length - 1]!);
  return { leaf, untrusted, root };
}
