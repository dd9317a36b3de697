/**
 * What the CA signs with and what it hands out (istiod's KeyCertBundle): the signing cert and key,
 * the intermediates between it and a root, and the trust bundle (every root workloads must trust,
 * the current one first).
 */
import { MeshError } from '../../util/errors.js';
import { parseCertificates, spkiOf, x509 } from '../crypto.js';
import { isCaCert, type SigningCert } from './certificates.js';

export type CaSource = 'self-signed' | 'plugged';

export interface KeyCertBundle {
  readonly source: CaSource;
  readonly signer: SigningCert;
  /** Certificates above the signer, up to but not including the root (often none). */
  readonly intermediates: readonly x509.X509Certificate[];
  /** The trust bundle; roots[0] is the one the signer chains to. */
  readonly roots: readonly x509.X509Certificate[];
}

export const toPem = (certs: readonly x509.X509Certificate[]): string => certs.map((c) => `${c.toString('pem')}\n`).join('');

export function sameCert(a: x509.X509Certificate, b: x509.X509Certificate): boolean {
  return Buffer.from(a.rawData).equals(Buffer.from(b.rawData));
}

/**
 * What goes between a leaf and the trust bundle: the signer (unless it is a root itself), then the
 * intermediates above it.
 */
export function chainBelowRoot(bundle: KeyCertBundle): x509.X509Certificate[] {
  const signerIsRoot = bundle.roots.some((r) => sameCert(r, bundle.signer.cert));
  return [...(signerIsRoot ? [] : [bundle.signer.cert]), ...bundle.intermediates];
}

/** `certs` with duplicates (by DER) and the given ones removed. */
export function withoutCerts(certs: readonly x509.X509Certificate[], drop: readonly x509.X509Certificate[]): x509.X509Certificate[] {
  const out: x509.X509Certificate[] = [];
  for (const c of certs) if (!drop.some((d) => sameCert(c, d)) && !out.some((o) => sameCert(o, c))) out.push(c);
  return out;
}

async function signedBy(cert: x509.X509Certificate, issuer: x509.X509Certificate): Promise<boolean> {
  if (cert.issuer !== issuer.subject) return false;
  try {
    return await cert.verify({ publicKey: issuer.publicKey, signatureOnly: true });
  } catch {
    return false;
  }
}

/**
 * Checks a plug-in or persisted bundle as istiod's NewVerifiedKeyCertBundleFromPem does: the key
 * belongs to the signing cert, the signing cert is a CA, and signer → intermediates → one of the
 * roots is a valid signature chain within its validity. Returns the bundle with roots reordered
 * so the root of the chain comes first.
 */
export async function verifyBundle(bundle: KeyCertBundle, what: string, now: Date = new Date()): Promise<KeyCertBundle> {
  const { signer, intermediates, roots } = bundle;
  if (!Buffer.from(signer.cert.publicKey.rawData).equals(await spkiOf(signer.keys.publicKey))) {
    throw new MeshError('INVALID_ARGUMENT', `${what}: the private key does not match the CA certificate`);
  }
  if (!isCaCert(signer.cert)) throw new MeshError('INVALID_ARGUMENT', `${what}: the CA certificate is not a CA (CA:true with keyCertSign)`);
  for (const c of [signer.cert, ...intermediates]) {
    if (c.notAfter.getTime() <= now.getTime())
      throw new MeshError(
        'INVALID_ARGUMENT',
        `${what}: certificate ${c.subject || '(empty subject)'} expired at ${c.notAfter.toISOString()}`,
      );
  }
  if (roots.length === 0) throw new MeshError('INVALID_ARGUMENT', `${what}: no root certificate`);
  let last = signer.cert;
  for (const next of intermediates) {
    if (!(await signedBy(last, next)))
      throw new MeshError(
        'INVALID_ARGUMENT',
        `${what}: ${last.subject || '(empty subject)'} is not signed by the next certificate of the chain, ${next.subject}`,
      );
    last = next;
  }
  const rootIndex = await firstIndex(roots, (r) => (sameCert(r, last) ? Promise.resolve(true) : signedBy(last, r)));
  if (rootIndex < 0)
    throw new MeshError('INVALID_ARGUMENT', `${what}: the certificate chain does not lead to a root in ${'root-cert.pem'}`);
  const root = roots[rootIndex]!;
  return { ...bundle, roots: [root, ...roots.filter((_, i) => i !== rootIndex)] };
}

async function firstIndex<T>(items: readonly T[], pred: (t: T) => Promise<boolean>): Promise<number> {
  for (let i = 0; i < items.length; i++) if (await pred(items[i]!)) return i;
  return -1;
}

/**
 * The intermediates of a plug-in `cert-chain.pem` (istio's convention: the signing cert, then up
 * to and including the root): the signing cert itself and any root are dropped, so responses carry
 * each certificate once, the trust bundle last.
 */
export function intermediatesFrom(
  chainPem: string | undefined,
  signer: x509.X509Certificate,
  roots: readonly x509.X509Certificate[],
  what: string,
): x509.X509Certificate[] {
  if (chainPem === undefined || chainPem.trim() === '') return [];
  return withoutCerts(parseCertificates(chainPem, what), [signer, ...roots]);
}
