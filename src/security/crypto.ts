/**
 * Key material for the CA on Node's WebCrypto, with @peculiar/x509 for certificates (no ASN.1 of
 * our own). Private keys live as non-extractable-by-default CryptoKeys plus PKCS#8 PEM only where
 * they are persisted; nothing here logs key bytes.
 */
import 'reflect-metadata'; // tsyringe, inside @peculiar/x509, needs a Reflect metadata polyfill.
import * as x509 from '@peculiar/x509';
import { createPrivateKey, createPublicKey, randomBytes, webcrypto, type KeyObject } from 'node:crypto';
import { MeshError } from '../util/errors.js';

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

export { x509 };
export type CryptoKey = webcrypto.CryptoKey;

/** Key types the CA can hold and that workloads may present in a CSR. */
export type KeyType = 'ECDSA' | 'RSA';

export interface KeyPair {
  readonly privateKey: CryptoKey;
  readonly publicKey: CryptoKey;
}

const NODE_CURVES: Record<string, 'P-256' | 'P-384'> = { prime256v1: 'P-256', secp384r1: 'P-384' };

/** WebCrypto import parameters for a CA key: ECDSA P-256/P-384 or RSA PKCS#1 v1.5 with SHA-256. */
function importParams(key: KeyObject): webcrypto.EcKeyImportParams | webcrypto.RsaHashedImportParams {
  if (key.asymmetricKeyType === 'ec') {
    const curve = NODE_CURVES[key.asymmetricKeyDetails?.namedCurve ?? ''];
    if (!curve)
      throw new MeshError('INVALID_ARGUMENT', `unsupported EC curve ${key.asymmetricKeyDetails?.namedCurve ?? '?'} (P-256 or P-384 only)`);
    return { name: 'ECDSA', namedCurve: curve };
  }
  if (key.asymmetricKeyType === 'rsa') return { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
  throw new MeshError('INVALID_ARGUMENT', `unsupported key type ${key.asymmetricKeyType ?? '?'} (ECDSA or RSA only)`);
}

/** The signature algorithm a CA key signs certificates with (SHA-256, SHA-384 for P-384). */
export function signingAlgorithm(key: CryptoKey): webcrypto.EcdsaParams | webcrypto.RsaHashedImportParams {
  const alg = key.algorithm as webcrypto.EcKeyAlgorithm | webcrypto.RsaHashedKeyAlgorithm;
  if (alg.name === 'ECDSA')
    return { name: 'ECDSA', hash: (alg as webcrypto.EcKeyAlgorithm).namedCurve === 'P-384' ? 'SHA-384' : 'SHA-256' };
  return { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' };
}

/** A fresh key pair: ECDSA P-256 (default) or RSA 2048 (e = 65537). */
export async function generateKeyPair(type: KeyType = 'ECDSA'): Promise<KeyPair> {
  const params: webcrypto.EcKeyGenParams | webcrypto.RsaHashedKeyGenParams =
    type === 'ECDSA'
      ? { name: 'ECDSA', namedCurve: 'P-256' }
      : { name: 'RSASSA-PKCS1-v1_5', modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' };
  const pair = (await webcrypto.subtle.generateKey(params, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  return { privateKey: pair.privateKey, publicKey: pair.publicKey };
}

/** PKCS#8 PEM ("PRIVATE KEY") of an extractable private key — only for files written with mode 0600. */
export async function exportPrivateKeyPem(key: CryptoKey): Promise<string> {
  const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key));
  return createPrivateKey({ key: der, format: 'der', type: 'pkcs8' }).export({ format: 'pem', type: 'pkcs8' }).toString();
}

/**
 * A private key from PEM in any of the encodings istiod accepts in ca-key.pem (PKCS#8, PKCS#1
 * "RSA PRIVATE KEY", SEC1 "EC PRIVATE KEY"), as a signing CryptoKey plus its public half.
 * Errors never quote the input.
 */
export async function importPrivateKeyPem(pem: string, what: string): Promise<KeyPair> {
  let key: KeyObject;
  try {
    key = createPrivateKey(pem);
  } catch (err) {
    throw new MeshError('INVALID_ARGUMENT', `${what}: not a PEM private key (${(err as Error).message})`);
  }
  const alg = importParams(key);
  const pkcs8 = key.export({ format: 'der', type: 'pkcs8' });
  const spki = createPublicKey(key).export({ format: 'der', type: 'spki' });
  const privateKey = await webcrypto.subtle.importKey('pkcs8', pkcs8, alg, true, ['sign']);
  const publicKey = await webcrypto.subtle.importKey('spki', spki, alg, true, ['verify']);
  return { privateKey, publicKey };
}

/** SubjectPublicKeyInfo DER of a public CryptoKey (to compare keys). */
export async function spkiOf(key: CryptoKey): Promise<Buffer> {
  return Buffer.from(await webcrypto.subtle.exportKey('spki', key));
}

export interface PublicKeyInfo {
  readonly type: string;
  /** RSA modulus bits. */
  readonly bits?: number;
  /** WebCrypto curve name for EC keys (P-256, P-384, or Node's name for others). */
  readonly curve?: string;
}

/** Type and strength of a public key (SubjectPublicKeyInfo DER), read by Node's crypto. */
export function publicKeyInfo(spki: ArrayBuffer | Uint8Array): PublicKeyInfo {
  const key = createPublicKey({ key: Buffer.from(spki instanceof Uint8Array ? spki : new Uint8Array(spki)), format: 'der', type: 'spki' });
  const d = key.asymmetricKeyDetails ?? {};
  const curve = d.namedCurve !== undefined ? (NODE_CURVES[d.namedCurve] ?? d.namedCurve) : undefined;
  return {
    type: key.asymmetricKeyType ?? 'unknown',
    ...(d.modulusLength !== undefined ? { bits: d.modulusLength } : {}),
    ...(curve !== undefined ? { curve } : {}),
  };
}

/** A positive random 128-bit serial number, hex (as istiod: rand.Int below 2^128). */
export function randomSerial(): string {
  const b = randomBytes(16);
  b[0] = (b[0] ?? 0) & 0x7f;
  if (b[0] === 0) b[0] = 1; // keep the DER integer 16 bytes long and positive
  return b.toString('hex');
}

/** Every certificate of a PEM bundle, in order (blocks of other types are skipped). */
export function splitPemCertificates(pem: string): string[] {
  return [...pem.matchAll(/-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g)].map((m) => `${m[0]}\n`);
}

/** Parses every certificate of a PEM bundle; a bundle without any is an error naming `what`. */
export function parseCertificates(pem: string, what: string): x509.X509Certificate[] {
  const blocks = splitPemCertificates(pem);
  if (blocks.length === 0) throw new MeshError('INVALID_ARGUMENT', `${what}: no PEM certificate found`);
  return blocks.map((b, i) => {
    try {
      return new x509.X509Certificate(b);
    } catch (err) {
      throw new MeshError('INVALID_ARGUMENT', `${what}: certificate ${i + 1} does not parse (${(err as Error).message})`);
    }
  });
}
