/**
 * CSR intake: parse, check the self-signature (proof of possession) and refuse weak keys. Only the
 * public key is taken from a CSR — its subject and requested SANs are ignored (the SAN comes from
 * the authenticated caller), as istiod does.
 */
import { publicKeyInfo, x509 } from '../crypto.js';
import { CaError } from './errors.js';

const MIN_RSA_BITS = 2048;
const ALLOWED_CURVES = new Set(['P-256', 'P-384']);

/** Why a key is too weak for a workload certificate, or undefined when it is acceptable. */
export function weakKeyReason(spki: ArrayBuffer): string | undefined {
  const info = publicKeyInfo(spki);
  if (info.type === 'rsa')
    return (info.bits ?? 0) < MIN_RSA_BITS ? `RSA key of ${info.bits ?? 0} bits is too weak (at least ${MIN_RSA_BITS})` : undefined;
  if (info.type === 'ec')
    return ALLOWED_CURVES.has(info.curve ?? '') ? undefined : `EC curve ${info.curve ?? '?'} is not allowed (P-256 or P-384)`;
  return `key type ${info.type} is not allowed (ECDSA P-256/P-384 or RSA >= ${MIN_RSA_BITS})`;
}

/** A verified CSR, or a CSR_ERROR that says what is wrong (never echoing the CSR). */
export async function parseCsr(csrPem: string): Promise<x509.Pkcs10CertificateRequest> {
  if (!/-----BEGIN (NEW )?CERTIFICATE REQUEST-----/.test(csrPem)) {
    throw new CaError('CSR_ERROR', 'failed to decode the CSR: no PEM "CERTIFICATE REQUEST" block');
  }
  let csr: x509.Pkcs10CertificateRequest;
  try {
    csr = new x509.Pkcs10CertificateRequest(csrPem.replace(/NEW CERTIFICATE REQUEST/g, 'CERTIFICATE REQUEST'));
  } catch (err) {
    throw new CaError('CSR_ERROR', `failed to parse the CSR (${(err as Error).message})`);
  }
  let weak: string | undefined;
  try {
    weak = weakKeyReason(csr.publicKey.rawData);
  } catch (err) {
    throw new CaError('CSR_ERROR', `the CSR public key does not parse (${(err as Error).message})`);
  }
  if (weak) throw new CaError('CSR_ERROR', `the CSR key is refused: ${weak}`);
  let valid: boolean;
  try {
    valid = await csr.verify();
  } catch (err) {
    throw new CaError('CSR_ERROR', `the CSR signature cannot be checked (${(err as Error).message})`);
  }
  if (!valid) throw new CaError('CSR_ERROR', 'the CSR signature is invalid');
  return csr;
}
