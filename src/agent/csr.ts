/**
 * Workload key and PKCS#10 CSR, as Istio's agent makes them (pkiutil.GenCSR): a fresh key per
 * request, no subject, the SPIFFE URI as a critical SAN. The SAN is only a hint — the CA takes the
 * identity from the authenticated caller. The private key is exported once, as PEM, for the files
 * and SDS responses the agent itself writes; it is never logged.
 */
import { exportPrivateKeyPem, generateKeyPair, signingAlgorithm, x509, type KeyType } from '../security/crypto.js';

export interface WorkloadKeyAndCsr {
  readonly csrPem: string;
  /** PKCS#8 PEM. Goes only into key.pem (0600) and the SDS `default` secret. */
  readonly privateKeyPem: string;
  /** SubjectPublicKeyInfo DER, to check that the issued leaf carries this key. */
  readonly publicKeySpki: Uint8Array;
}

export async function createKeyAndCsr(keyType: KeyType, identityHint: string): Promise<WorkloadKeyAndCsr> {
  const keys = await generateKeyPair(keyType);
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    keys: { privateKey: keys.privateKey, publicKey: keys.publicKey },
    signingAlgorithm: signingAlgorithm(keys.privateKey),
    // No subject: RFC 5280 then wants the SAN critical, as Go's x509 marks it.
    extensions: [new x509.SubjectAlternativeNameExtension([{ type: 'url', value: identityHint }], true)],
  });
  return {
    csrPem: csr.toString('pem'),
    privateKeyPem: await exportPrivateKeyPem(keys.privateKey),
    publicKeySpki: new Uint8Array(csr.publicKey.rawData),
  };
}
