/**
 * The CA (istiod's IstioCA): plug-in certs when `<caCertsDir>/ca-key.pem` exists, otherwise a
 * self-signed root persisted in `caDir`. Signs CSRs for the identities the server hands it (never
 * those in the CSR), with istiod's TTL rules: a non-positive request gets the default TTL, a
 * request above the maximum is refused with TTL_ERROR (not clamped), and no leaf outlives the
 * signing certificate.
 */
import { createHash } from 'node:crypto';
import type { Logger } from '../../util/log.js';
import { exportPrivateKeyPem, generateKeyPair, publicKeyInfo, type KeyType, x509 } from '../crypto.js';
import { formatGoDurationMs } from '../../util/duration.js';
import { issueLeaf } from './certificates.js';
import { parseCsr } from './csr.js';
import { CaError } from './errors.js';
import { chainBelowRoot, toPem, withoutCerts, type CaSource, type KeyCertBundle } from './key-cert-bundle.js';
import { loadExtraRoots, loadPluggedCerts } from './plugged.js';
import {
  loadOrCreateSelfSigned,
  persistPromotion,
  persistSelfSigned,
  promotePending,
  reissueActiveRoot,
  rootNeedsRotation,
  stageNewKeyRoot,
  stateRoots,
  type SelfSignedState,
} from './self-signed.js';

export const DEFAULT_WORKLOAD_CERT_TTL_MS = 24 * 3_600_000;
export const DEFAULT_MAX_WORKLOAD_CERT_TTL_MS = 90 * 24 * 3_600_000;
export const DEFAULT_ROOT_CERT_TTL_MS = 3650 * 24 * 3_600_000;
export const DEFAULT_ROOT_CHECK_INTERVAL_MS = 3_600_000;
export const DEFAULT_ROOT_GRACE_PERIOD_PERCENTILE = 20;

export interface CaOptions {
  readonly trustDomain: string;
  /** Where the self-signed root is kept. */
  readonly caDir: string;
  /** istiod's ROOT_CA_DIR: plug-in certs, or extra roots (root-cert.pem alone). */
  readonly caCertsDir?: string;
  /** Key of a new self-signed root (default ECDSA P-256). */
  readonly keyType?: KeyType;
  readonly rootCertTtlMs?: number;
  readonly workloadCertTtlMs?: number;
  readonly maxWorkloadCertTtlMs?: number;
  /** How often the self-signed root is checked for rotation; <= 0 disables (as istiod). */
  readonly rootCheckIntervalMs?: number;
  readonly rootGracePeriodPercentile?: number;
  readonly logger: Logger;
  readonly now?: () => Date;
}

export interface SignOptions {
  /** SAN entries: the caller's identities (spiffe:// URIs), or DNS names / IPs for serving certs. */
  readonly subjectIds: readonly string[];
  /** Requested lifetime; undefined or <= 0 → the default workload TTL. */
  readonly ttlMs?: number;
}

/** A key and certificate chain generated here (istiod's GenKeyCert, for its own serving cert). */
export interface KeyCert {
  readonly certChainPem: string;
  readonly privateKeyPem: string;
  readonly notAfter: Date;
}

type RootsListener = (rootsPem: string) => void;

export class IstioCa {
  private bundle: KeyCertBundle;
  private selfSigned: SelfSignedState | undefined;
  private readonly extraRoots: readonly x509.X509Certificate[];
  private readonly listeners = new Set<RootsListener>();
  private timer: NodeJS.Timeout | undefined;
  private readonly now: () => Date;

  private constructor(
    private readonly opts: CaOptions,
    init: { bundle?: KeyCertBundle; selfSigned?: SelfSignedState; extraRoots: readonly x509.X509Certificate[] },
  ) {
    this.now = opts.now ?? (() => new Date());
    this.selfSigned = init.selfSigned;
    this.extraRoots = init.extraRoots;
    this.bundle = init.bundle ?? this.bundleFromState(init.selfSigned!);
  }

  static async create(opts: CaOptions): Promise<IstioCa> {
    const now = (opts.now ?? (() => new Date()))();
    const log = opts.logger;
    const plugged = opts.caCertsDir !== undefined ? await loadPluggedCerts(opts.caCertsDir, now) : undefined;
    if (plugged) {
      const ca = new IstioCa(opts, { bundle: plugged, extraRoots: [] });
      log.info('CA: using plug-in certificates', { dir: opts.caCertsDir, ...ca.describe() });
      return ca;
    }
    const extraRoots = await loadExtraRoots(opts.caCertsDir);
    const { state, created } = await loadOrCreateSelfSigned(
      {
        dir: opts.caDir,
        trustDomain: opts.trustDomain,
        keyType: opts.keyType ?? 'ECDSA',
        rootTtlMs: opts.rootCertTtlMs ?? DEFAULT_ROOT_CERT_TTL_MS,
      },
      now,
    );
    const ca = new IstioCa(opts, { selfSigned: state, extraRoots });
    log.info(created ? 'CA: created a self-signed root' : 'CA: loaded the persisted self-signed root', {
      dir: opts.caDir,
      extraRoots: extraRoots.length,
      ...ca.describe(),
    });
    await ca.checkRootRotation();
    return ca;
  }

  get source(): CaSource {
    return this.bundle.source;
  }

  get trustDomain(): string {
    return this.opts.trustDomain;
  }

  /** The trust bundle, PEM (the current root first). */
  trustBundlePem(): string {
    return toPem(this.bundle.roots);
  }

  roots(): readonly x509.X509Certificate[] {
    return this.bundle.roots;
  }

  /** Called with the new trust bundle whenever roots change (rotation). Returns an unsubscribe. */
  onRootsChange(listener: RootsListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Signs a CSR: the response's cert_chain — leaf first, then intermediates, then the trust bundle
   * as the last element (istiod keeps the root PEM whole there, several roots during a rotation).
   */
  async sign(csrPem: string, opts: SignOptions): Promise<string[]> {
    const csr = await parseCsr(csrPem);
    const ttlMs = this.checkTtl(opts.ttlMs);
    const leaf = await this.issue(csr.publicKey, opts.subjectIds, ttlMs);
    return [leaf, ...chainBelowRoot(this.bundle)].map((c) => `${c.toString('pem')}\n`).concat(this.trustBundlePem());
  }

  /** A fresh key (the CA's key type) and a certificate for it; the key stays in memory. */
  async generateKeyCert(subjectIds: readonly string[], ttlMs: number): Promise<KeyCert> {
    const keyType: KeyType = publicKeyInfo(this.bundle.signer.cert.publicKey.rawData).type === 'rsa' ? 'RSA' : 'ECDSA';
    const keys = await generateKeyPair(keyType);
    const leaf = await this.issue(keys.publicKey, subjectIds, ttlMs);
    const chain = [leaf, ...chainBelowRoot(this.bundle), ...this.bundle.roots.slice(0, 1)];
    return { certChainPem: toPem(chain), privateKeyPem: await exportPrivateKeyPem(keys.privateKey), notAfter: leaf.notAfter };
  }

  /** istiod's TTL rules; the effective TTL, or a TTL_ERROR. */
  private checkTtl(requestedMs: number | undefined): number {
    const max = this.opts.maxWorkloadCertTtlMs ?? DEFAULT_MAX_WORKLOAD_CERT_TTL_MS;
    if (requestedMs !== undefined && requestedMs > max) {
      throw new CaError(
        'TTL_ERROR',
        `requested TTL ${formatGoDurationMs(requestedMs)} is greater than the max allowed TTL ${formatGoDurationMs(max)}`,
      );
    }
    return requestedMs !== undefined && requestedMs > 0 ? requestedMs : (this.opts.workloadCertTtlMs ?? DEFAULT_WORKLOAD_CERT_TTL_MS);
  }

  private async issue(
    publicKey: x509.PublicKey | CryptoKeyLike,
    subjectIds: readonly string[],
    ttlMs: number,
  ): Promise<x509.X509Certificate> {
    try {
      return await issueLeaf({ signer: this.bundle.signer, publicKey, subjectIds, ttlMs, now: this.now() });
    } catch (err) {
      throw new CaError('CERT_GEN_ERROR', `failed to generate the certificate (${(err as Error).message})`, { cause: err });
    }
  }

  /**
   * Self-signed only: promotes a staged root whose time has come, and re-issues the active root
   * (same key) once less than the grace percentile of its lifetime is left. True when roots changed.
   */
  async checkRootRotation(): Promise<boolean> {
    const state = this.selfSigned;
    if (!state) return false;
    const now = this.now();
    const promoted = promotePending(state, now);
    if (promoted) {
      await persistPromotion(this.opts.caDir, promoted, now);
      this.setState(promoted, 'CA: the staged root is now active');
      return true;
    }
    if (!rootNeedsRotation(state.active.cert, this.opts.rootGracePeriodPercentile ?? DEFAULT_ROOT_GRACE_PERIOD_PERCENTILE, now))
      return false;
    const next = await reissueActiveRoot(state, this.opts.rootCertTtlMs ?? DEFAULT_ROOT_CERT_TTL_MS, now);
    await persistSelfSigned(this.opts.caDir, next, now);
    this.setState(next, 'CA: re-issued the self-signed root (same key)');
    return true;
  }

  /**
   * Manual rotation of the self-signed root. Without `newKey`: re-issue with the same key (seamless).
   * With `newKey`: a new root joins the trust bundle now and starts signing after `overlapMs`
   * (default: the maximum workload TTL, so every workload has renewed and learnt it by then).
   */
  async rotateRoot(opts: { newKey?: boolean; overlapMs?: number } = {}): Promise<void> {
    const state = this.selfSigned;
    if (!state) throw new CaError('CA_NOT_READY', 'root rotation is only for the self-signed CA; replace the plug-in certificates instead');
    const now = this.now();
    const rootTtlMs = this.opts.rootCertTtlMs ?? DEFAULT_ROOT_CERT_TTL_MS;
    const next = opts.newKey
      ? await stageNewKeyRoot(
          state,
          {
            trustDomain: this.opts.trustDomain,
            keyType: this.opts.keyType ?? 'ECDSA',
            rootTtlMs,
            overlapMs: opts.overlapMs ?? this.opts.maxWorkloadCertTtlMs ?? DEFAULT_MAX_WORKLOAD_CERT_TTL_MS,
          },
          now,
        )
      : await reissueActiveRoot(state, rootTtlMs, now);
    await persistSelfSigned(this.opts.caDir, next, now);
    this.setState(next, opts.newKey ? 'CA: staged a new root (new key)' : 'CA: re-issued the self-signed root (same key)');
    if (opts.newKey && (opts.overlapMs ?? 1) <= 0) await this.checkRootRotation();
  }

  /** Starts the periodic root check (self-signed only; the timer does not keep the process alive). */
  start(): void {
    const every = this.opts.rootCheckIntervalMs ?? DEFAULT_ROOT_CHECK_INTERVAL_MS;
    if (!this.selfSigned || every <= 0 || this.timer) return;
    this.timer = setInterval(() => {
      this.checkRootRotation().catch((err: unknown) => this.opts.logger.error('CA: root rotation check failed', { error: err }));
    }, every);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private setState(state: SelfSignedState, msg: string): void {
    this.selfSigned = state;
    this.bundle = this.bundleFromState(state);
    this.opts.logger.info(msg, this.describe());
    const pem = this.trustBundlePem();
    for (const l of this.listeners) l(pem);
  }

  private bundleFromState(state: SelfSignedState): KeyCertBundle {
    const roots = withoutCerts([...stateRoots(state, this.now()), ...this.extraRoots], []);
    return { source: 'self-signed', signer: state.active, intermediates: [], roots };
  }

  /** Public facts for logs: never key material. */
  private describe(): Record<string, unknown> {
    const fp = (c: x509.X509Certificate): string => createHash('sha256').update(Buffer.from(c.rawData)).digest('hex').slice(0, 16);
    const signer = this.bundle.signer.cert;
    return {
      source: this.bundle.source,
      trustDomain: this.opts.trustDomain,
      signer: signer.subject,
      signerNotAfter: signer.notAfter.toISOString(),
      roots: this.bundle.roots.map(fp),
      ...(this.selfSigned?.pending ? { pendingActivateAt: this.selfSigned.pending.activateAt.toISOString() } : {}),
    };
  }
}

type CryptoKeyLike = Parameters<typeof issueLeaf>[0]['publicKey'];
