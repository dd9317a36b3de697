/**
 * The self-signed CA's persisted state, in a directory laid out like a plug-in `cacerts` dir
 * (so it can be copied to another replica's cacerts dir and used there as is):
 *
 *   ca-cert.pem      the active root (signs workload certs)       0644
 *   ca-key.pem       its private key, PKCS#8                      0600
 *   root-cert.pem    the trust bundle: active root first, then a pending root and older roots
 *                    still inside their validity (the rotation overlap)   0644
 *   next-ca-cert.pem, next-ca-key.pem, rotation.json   a staged new-key root until it activates
 *
 * Rotation comes in two kinds. Re-issue (istiod's automatic rotation): same key and subject, new
 * validity; certificates issued under the old and new root verify against either, so both stay in
 * the bundle until the old one expires. New key: the new root joins the trust bundle at once but
 * signs only from `activateAt` on, so every workload can learn it (on its next renewal) before any
 * peer presents a certificate it issued.
 */
import { readFile, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import { MeshError } from '../../util/errors.js';
import { exportPrivateKeyPem, generateKeyPair, importPrivateKeyPem, parseCertificates, spkiOf, type KeyType, x509 } from '../crypto.js';
import { createSelfSignedRoot, reissueRoot, type SigningCert } from './certificates.js';
import { CA_CERT_FILE, CA_KEY_FILE, readOptional, ROOT_CERT_FILE, writePrivate, writePublic } from './files.js';
import { sameCert, toPem, withoutCerts } from './key-cert-bundle.js';

const NEXT_CERT_FILE = 'next-ca-cert.pem';
const NEXT_KEY_FILE = 'next-ca-key.pem';
const ROTATION_FILE = 'rotation.json';
/** The files of a staged rotation (dropped when the root is replaced from outside, e.g. the replicas' Secret). */
export const STAGED_ROTATION_FILES: readonly string[] = [NEXT_CERT_FILE, NEXT_KEY_FILE, ROTATION_FILE];

export interface SelfSignedState {
  readonly active: SigningCert;
  /** Older roots still trusted (not the active or pending one). */
  readonly retained: readonly x509.X509Certificate[];
  readonly pending?: { readonly signer: SigningCert; readonly activateAt: Date };
}

export interface SelfSignedOptions {
  readonly dir: string;
  readonly trustDomain: string;
  readonly keyType: KeyType;
  readonly rootTtlMs: number;
}

const notExpired = (certs: readonly x509.X509Certificate[], now: Date): x509.X509Certificate[] =>
  certs.filter((c) => c.notAfter.getTime() > now.getTime());

/** The roots this state trusts: active, pending, retained (expired ones dropped). */
export function stateRoots(state: SelfSignedState, now: Date): x509.X509Certificate[] {
  return withoutCerts(notExpired([state.active.cert, ...(state.pending ? [state.pending.signer.cert] : []), ...state.retained], now), []);
}

async function keyMatches(cert: x509.X509Certificate, keys: SigningCert['keys']): Promise<boolean> {
  return Buffer.from(cert.publicKey.rawData).equals(await spkiOf(keys.publicKey));
}

async function readSigner(
  dir: string,
  certFile: string,
  keyFile: string,
): Promise<{ cert: x509.X509Certificate; keys: SigningCert['keys'] } | undefined> {
  const keyPem = await readOptional(path.join(dir, keyFile));
  const certPem = await readOptional(path.join(dir, certFile));
  if (keyPem === undefined && certPem === undefined) return undefined;
  if (keyPem === undefined || certPem === undefined) {
    throw new MeshError(
      'INVALID_ARGUMENT',
      `CA state in ${dir}: ${keyPem === undefined ? keyFile : certFile} is missing next to ${keyPem === undefined ? certFile : keyFile}`,
    );
  }
  const [cert] = parseCertificates(certPem, path.join(dir, certFile));
  return { cert: cert!, keys: await importPrivateKeyPem(keyPem, path.join(dir, keyFile)) };
}

/** Loads the persisted root, or creates and persists one; `created` says which. */
export async function loadOrCreateSelfSigned(
  opts: SelfSignedOptions,
  now: Date = new Date(),
): Promise<{ state: SelfSignedState; created: boolean }> {
  const loaded = await loadSelfSigned(opts.dir, now);
  if (loaded) return { state: loaded, created: false };
  const keys = await generateKeyPair(opts.keyType);
  const cert = await createSelfSignedRoot(keys, { trustDomain: opts.trustDomain, ttlMs: opts.rootTtlMs, now });
  const state: SelfSignedState = { active: { cert, keys }, retained: [] };
  await persistSelfSigned(opts.dir, state, now);
  return { state, created: true };
}

async function loadSelfSigned(dir: string, now: Date): Promise<SelfSignedState | undefined> {
  let active = await readSigner(dir, CA_CERT_FILE, CA_KEY_FILE);
  if (!active) return undefined;
  let next = await readSigner(dir, NEXT_CERT_FILE, NEXT_KEY_FILE).catch(() => undefined);
  if (!(await keyMatches(active.cert, active.keys))) {
    // A promotion interrupted between its two renames: the key is already the next one.
    const nextCertPem = await readOptional(path.join(dir, NEXT_CERT_FILE));
    const nextCert = nextCertPem !== undefined ? parseCertificates(nextCertPem, NEXT_CERT_FILE)[0] : undefined;
    if (!nextCert || !(await keyMatches(nextCert, active.keys))) {
      throw new MeshError(
        'INVALID_ARGUMENT',
        `CA state in ${dir}: ${CA_KEY_FILE} does not match ${CA_CERT_FILE}; refusing to replace the root (move the directory away to start a new mesh root)`,
      );
    }
    active = { cert: nextCert, keys: active.keys };
    next = undefined;
    await rename(path.join(dir, NEXT_CERT_FILE), path.join(dir, CA_CERT_FILE));
    await rm(path.join(dir, ROTATION_FILE), { force: true });
  }
  const bundlePem = await readOptional(path.join(dir, ROOT_CERT_FILE));
  const bundle = bundlePem !== undefined ? parseCertificates(bundlePem, path.join(dir, ROOT_CERT_FILE)) : [];
  let pending: SelfSignedState['pending'];
  if (next) {
    const rotation = JSON.parse(await readFile(path.join(dir, ROTATION_FILE), 'utf8').catch(() => '{}')) as { activateAt?: string };
    const at = new Date(rotation.activateAt ?? Number.NaN);
    if (!Number.isNaN(at.getTime())) pending = { signer: next, activateAt: at };
  }
  const drop = [active.cert, ...(pending ? [pending.signer.cert] : [])];
  return { active, retained: notExpired(withoutCerts(bundle, drop), now), ...(pending ? { pending } : {}) };
}

/** Writes the whole state (key files 0600). */
export async function persistSelfSigned(dir: string, state: SelfSignedState, now: Date = new Date()): Promise<void> {
  await writePrivate(path.join(dir, CA_KEY_FILE), await exportPrivateKeyPem(state.active.keys.privateKey));
  await writePublic(path.join(dir, CA_CERT_FILE), toPem([state.active.cert]));
  await writePublic(path.join(dir, ROOT_CERT_FILE), toPem(stateRoots(state, now)));
  if (state.pending) {
    await writePrivate(path.join(dir, NEXT_KEY_FILE), await exportPrivateKeyPem(state.pending.signer.keys.privateKey));
    await writePublic(path.join(dir, NEXT_CERT_FILE), toPem([state.pending.signer.cert]));
    await writePublic(path.join(dir, ROTATION_FILE), `${JSON.stringify({ activateAt: state.pending.activateAt.toISOString() })}\n`);
  } else {
    await Promise.all([NEXT_KEY_FILE, NEXT_CERT_FILE, ROTATION_FILE].map((f) => rm(path.join(dir, f), { force: true })));
  }
}

/**
 * istiod's rotation test (certutil.GetWaitTime with the grace percentile): rotate once less than
 * `gracePercentile` % of the root's lifetime is left.
 */
export function rootNeedsRotation(cert: x509.X509Certificate, gracePercentile: number, now: Date): boolean {
  const lifetime = cert.notAfter.getTime() - cert.notBefore.getTime();
  return cert.notAfter.getTime() - now.getTime() < (lifetime * gracePercentile) / 100;
}

/** Same-key re-issue; the old root stays trusted until it expires. */
export async function reissueActiveRoot(state: SelfSignedState, rootTtlMs: number, now: Date): Promise<SelfSignedState> {
  const cert = await reissueRoot(state.active.cert, state.active.keys, rootTtlMs, now);
  return { ...state, active: { cert, keys: state.active.keys }, retained: [state.active.cert, ...state.retained] };
}

/** Stages a root with a new key: trusted now, signing from `now + overlapMs`. */
export async function stageNewKeyRoot(
  state: SelfSignedState,
  opts: Omit<SelfSignedOptions, 'dir'> & { overlapMs: number },
  now: Date,
): Promise<SelfSignedState> {
  const keys = await generateKeyPair(opts.keyType);
  const cert = await createSelfSignedRoot(keys, { trustDomain: opts.trustDomain, ttlMs: opts.rootTtlMs, now });
  const retained = state.pending ? [state.pending.signer.cert, ...state.retained] : state.retained;
  return { ...state, retained, pending: { signer: { cert, keys }, activateAt: new Date(now.getTime() + opts.overlapMs) } };
}

/** The pending root becomes the active one once its time has come (the old one stays trusted). */
export function promotePending(state: SelfSignedState, now: Date): SelfSignedState | undefined {
  if (!state.pending || state.pending.activateAt.getTime() > now.getTime()) return undefined;
  return {
    active: state.pending.signer,
    retained: [state.active.cert, ...state.retained.filter((c) => !sameCert(c, state.pending!.signer.cert))],
  };
}

/** Persists a promotion with renames in an order `loadSelfSigned` can finish after a crash. */
export async function persistPromotion(dir: string, state: SelfSignedState, now: Date): Promise<void> {
  await rename(path.join(dir, NEXT_KEY_FILE), path.join(dir, CA_KEY_FILE));
  await rename(path.join(dir, NEXT_CERT_FILE), path.join(dir, CA_CERT_FILE));
  await rm(path.join(dir, ROTATION_FILE), { force: true });
  await writePublic(path.join(dir, ROOT_CERT_FILE), toPem(stateRoots(state, now)));
}
