/**
 * The files proxyless gRPC's file_watcher reads (Istio's OUTPUT_CERTS layout): cert-chain.pem,
 * key.pem (0600) and root-cert.pem. Every file is written to a temporary name and renamed into
 * place, so a reader never sees half a file; the three renames follow each other directly, root
 * first (trust before the certificate that needs it), key and chain last and back to back.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';

export const CERT_CHAIN_FILE = 'cert-chain.pem';
export const KEY_FILE = 'key.pem';
export const ROOT_CERT_FILE = 'root-cert.pem';

export interface CertFilePaths {
  readonly certChain: string;
  readonly key: string;
  readonly rootCert: string;
}

export function certFilePaths(dir: string): CertFilePaths {
  return { certChain: path.join(dir, CERT_CHAIN_FILE), key: path.join(dir, KEY_FILE), rootCert: path.join(dir, ROOT_CERT_FILE) };
}

interface Staged {
  readonly tmp: string;
  readonly file: string;
}

async function stage(file: string, content: string, mode: number): Promise<Staged> {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${randomBytes(6).toString('hex')}.tmp`);
  // `mode` applies at creation (the umask can only narrow it); chmod makes it exact.
  await writeFile(tmp, content, { mode, flag: 'wx' });
  await chmod(tmp, mode);
  return { tmp, file };
}

/** Writes `content` to `file` atomically with `mode` (creating the directory). */
export async function writeFileAtomic(file: string, content: string, mode: number): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const s = await stage(file, content, mode);
  try {
    await rename(s.tmp, s.file);
  } catch (err) {
    await rm(s.tmp, { force: true });
    throw err;
  }
}

export interface CertFileContents {
  readonly certChainPem: string;
  readonly privateKeyPem: string;
  readonly rootCertPem: string;
}

/** Replaces the three files in `dir`; key 0600, certificates 0644. */
export async function writeCertFiles(dir: string, c: CertFileContents): Promise<CertFilePaths> {
  const paths = certFilePaths(dir);
  await mkdir(dir, { recursive: true, mode: 0o755 });
  const staged: Staged[] = [];
  try {
    staged.push(await stage(paths.rootCert, c.rootCertPem, 0o644));
    staged.push(await stage(paths.key, c.privateKeyPem, 0o600));
    staged.push(await stage(paths.certChain, c.certChainPem, 0o644));
    for (const s of staged) await rename(s.tmp, s.file);
  } catch (err) {
    await Promise.all(staged.map((s) => rm(s.tmp, { force: true })));
    throw err;
  }
  return paths;
}
