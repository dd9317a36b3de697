/** Small file helpers for CA state: atomic writes, private keys with mode 0600, optional reads. */
import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** istiod's file names (security/pkg/pki/ca): the same in a plug-in `cacerts` dir and in our state dir. */
export const CA_CERT_FILE = 'ca-cert.pem';
export const CA_KEY_FILE = 'ca-key.pem';
export const ROOT_CERT_FILE = 'root-cert.pem';
export const CERT_CHAIN_FILE = 'cert-chain.pem';

export async function readOptional(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

/** Writes via a temporary file and rename, so a crash never leaves half a key; `mode` applies from creation. */
export async function writeAtomic(file: string, content: string, mode: number): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, content, { mode });
  await chmod(tmp, mode); // the umask may have narrowed or (for 0644) kept it; be exact
  await rename(tmp, file);
}

export const writePrivate = (file: string, pem: string): Promise<void> => writeAtomic(file, pem, 0o600);
export const writePublic = (file: string, pem: string): Promise<void> => writeAtomic(file, pem, 0o644);
