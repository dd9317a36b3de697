/**
 * Plug-in CA certificates from a `cacerts` directory with istiod's file names: ca-cert.pem (the
 * signing cert), ca-key.pem, root-cert.pem (the trust bundle) and optionally cert-chain.pem (the
 * signing cert's chain up to the root). Used when ca-key.pem is present, as istiod does.
 */
import path from 'node:path';
import { MeshError } from '../../util/errors.js';
import { importPrivateKeyPem, parseCertificates } from '../crypto.js';
import { CA_CERT_FILE, CA_KEY_FILE, CERT_CHAIN_FILE, readOptional, ROOT_CERT_FILE } from './files.js';
import { intermediatesFrom, verifyBundle, type KeyCertBundle } from './key-cert-bundle.js';

/** The plug-in bundle in `dir`, or undefined when there is no ca-key.pem (then the CA is self-signed). */
export async function loadPluggedCerts(dir: string, now: Date = new Date()): Promise<KeyCertBundle | undefined> {
  const keyPem = await readOptional(path.join(dir, CA_KEY_FILE));
  if (keyPem === undefined) return undefined;
  const what = `plug-in CA certificates in ${dir}`;
  const certPem = await readOptional(path.join(dir, CA_CERT_FILE));
  const rootPem = await readOptional(path.join(dir, ROOT_CERT_FILE));
  if (certPem === undefined) throw new MeshError('INVALID_ARGUMENT', `${what}: ${CA_KEY_FILE} is present but ${CA_CERT_FILE} is missing`);
  if (rootPem === undefined) throw new MeshError('INVALID_ARGUMENT', `${what}: ${ROOT_CERT_FILE} is missing`);
  const [cert] = parseCertificates(certPem, `${what}: ${CA_CERT_FILE}`);
  const roots = parseCertificates(rootPem, `${what}: ${ROOT_CERT_FILE}`);
  const keys = await importPrivateKeyPem(keyPem, `${what}: ${CA_KEY_FILE}`);
  const intermediates = intermediatesFrom(await readOptional(path.join(dir, CERT_CHAIN_FILE)), cert!, roots, `${what}: ${CERT_CHAIN_FILE}`);
  return verifyBundle({ source: 'plugged', signer: { cert: cert!, keys }, intermediates, roots }, what, now);
}

/**
 * Extra roots from `<cacerts>/root-cert.pem` when no plug-in key is there: istiod appends them to
 * the self-signed CA's trust bundle (e.g. the root of another mesh during a migration).
 */
export async function loadExtraRoots(dir: string | undefined): Promise<ReturnType<typeof parseCertificates>> {
  if (dir === undefined) return [];
  const pem = await readOptional(path.join(dir, ROOT_CERT_FILE));
  return pem === undefined ? [] : parseCertificates(pem, `${path.join(dir, ROOT_CERT_FILE)}`);
}
