/**
 * Certificate templates as istiod issues them (security/pkg/pki/util/generate_cert.go):
 *
 * - self-signed root: subject O=<trust domain>, CA:true (critical), keyCertSign (critical), a
 *   subject key id, NotBefore = now, 10 years by default;
 * - leaf (workload or istiod's own serving cert): empty subject, SAN (critical, because the subject
 *   is empty) holding only the identities the caller is entitled to, digitalSignature +
 *   keyEncipherment (critical), serverAuth + clientAuth, CA:false, the issuer's key id;
 *   NotBefore backdated by ClockSkewGracePeriod (2 min), NotAfter clamped to the issuer's.
 */
import { isIP } from 'node:net';
import { MeshError } from '../../util/errors.js';
import { randomSerial, signingAlgorithm, x509, type CryptoKey, type KeyPair } from '../crypto.js';
import { SPIFFE_PREFIX } from '../spiffe.js';

/** istiod's ClockSkewGracePeriod: leaf certificates are valid from 2 minutes before issuance. */
export const CLOCK_SKEW_GRACE_MS = 2 * 60_000;

/** A certificate that signs others, with its key. */
export interface SigningCert {
  readonly cert: x509.X509Certificate;
  readonly keys: KeyPair;
}

export interface RootOptions {
  readonly trustDomain: string;
  readonly ttlMs: number;
  readonly now?: Date;
}

/** A self-signed root for `keys` (istiod's NewSelfSignedIstioCAOptions template). */
export async function createSelfSignedRoot(keys: KeyPair, opts: RootOptions): Promise<x509.X509Certificate> {
  const now = opts.now ?? new Date();
  return x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name: [{ O: [opts.trustDomain] }],
    notBefore: now,
    notAfter: new Date(now.getTime() + opts.ttlMs),
    keys: { privateKey: keys.privateKey, publicKey: keys.publicKey },
    signingAlgorithm: signingAlgorithm(keys.privateKey),
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
}

/**
 * The same root re-issued with a new validity and serial but the same subject and key (istiod's
 * root rotation): certificates signed under either one verify against both.
 */
export async function reissueRoot(
  old: x509.X509Certificate,
  keys: KeyPair,
  ttlMs: number,
  now: Date = new Date(),
): Promise<x509.X509Certificate> {
  return x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name: old.subjectName,
    notBefore: now,
    notAfter: new Date(now.getTime() + ttlMs),
    keys: { privateKey: keys.privateKey, publicKey: keys.publicKey },
    signingAlgorithm: signingAlgorithm(keys.privateKey),
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
}

/** SAN entries from istiod-style subject IDs: an IP, a `spiffe://` URI, or else a DNS name. */
export function subjectAltNames(subjectIds: readonly string[]): x509.JsonGeneralNames {
  if (subjectIds.length === 0) throw new MeshError('INVALID_ARGUMENT', 'a certificate needs at least one subject ID');
  return subjectIds.map((id) =>
    isIP(id) ? { type: 'ip', value: id } : id.startsWith(SPIFFE_PREFIX) ? { type: 'url', value: id } : { type: 'dns', value: id },
  );
}

export interface LeafOptions {
  readonly signer: SigningCert;
  /** The subject's public key (from a verified CSR, or a key we generated). */
  readonly publicKey: CryptoKey | x509.PublicKey;
  readonly subjectIds: readonly string[];
  readonly ttlMs: number;
  readonly now?: Date;
}

/** A leaf certificate signed by `signer` (istiod's genCertTemplateFromCSR, isCA=false). */
export async function issueLeaf(opts: LeafOptions): Promise<x509.X509Certificate> {
  const now = opts.now ?? new Date();
  const signerCert = opts.signer.cert;
  if (now.getTime() >= signerCert.notAfter.getTime()) {
    throw new MeshError('INTERNAL', `signing certificate has expired at ${signerCert.notAfter.toISOString()}`);
  }
  // A leaf never outlives the certificate that signs it.
  const notAfter = new Date(Math.min(now.getTime() + opts.ttlMs, signerCert.notAfter.getTime()));
  const ski = signerCert.getExtension(x509.SubjectKeyIdentifierExtension);
  const aki = ski
    ? new x509.AuthorityKeyIdentifierExtension(ski.keyId)
    : await x509.AuthorityKeyIdentifierExtension.create(signerCert.publicKey);
  return x509.X509CertificateGenerator.create({
    serialNumber: randomSerial(),
    subject: [],
    issuer: signerCert.subjectName,
    notBefore: new Date(now.getTime() - CLOCK_SKEW_GRACE_MS),
    notAfter,
    publicKey: opts.publicKey,
    signingKey: opts.signer.keys.privateKey,
    signingAlgorithm: signingAlgorithm(opts.signer.keys.privateKey),
    extensions: [
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth]),
      new x509.BasicConstraintsExtension(false, undefined, true),
      aki,
      new x509.SubjectAlternativeNameExtension(subjectAltNames(opts.subjectIds), true),
    ],
  });
}

/** Is `cert` a CA certificate (CA:true with keyCertSign, or no key usage at all)? */
export function isCaCert(cert: x509.X509Certificate): boolean {
  const bc = cert.getExtension(x509.BasicConstraintsExtension);
  const ku = cert.getExtension(x509.KeyUsagesExtension);
  return bc?.ca === true && (!ku || (ku.usages & x509.KeyUsageFlags.keyCertSign) !== 0);
}

/** SAN URIs of a certificate (its SPIFFE IDs among them). */
export function sanUris(cert: x509.X509Certificate): string[] {
  const san = cert.getExtension(x509.SubjectAlternativeNameExtension);
  return san ? san.names.items.filter((n) => n.type === 'url').map((n) => n.value) : [];
}
