/**
 * The workload certificate's life cycle: a new key and CSR per issuance, the first one
 * authenticated with the JWT (or PROV_CERT), renewals with the current certificate (falling back to
 * the JWT when the CA refuses it), renewal at the grace-period ratio of the lifetime, retries with
 * exponential backoff and jitter. Listeners (files, SDS) hear about every new certificate.
 */
import { realClock, type Clock, type TimerHandle } from '../util/clock.js';
import { sanUris } from '../security/ca/certificates.js';
import { parseCertificates, type KeyType } from '../security/crypto.js';
import { MeshError, errorMessage } from '../util/errors.js';
import { silentLogger, type Logger } from '../util/log.js';
import type { CaCredential, CertSigner } from './ca-client.js';
import { createKeyAndCsr } from './csr.js';
import { MAX_TIMER_MS, backoffDelayMs, jitterOffset, rotationDelayMs } from './rotation.js';

/** The agent's current credentials. */
export interface WorkloadSecret {
  /** Every certificate the CA returned, leaf first (istiod: root last), concatenated. */
  readonly certChainPem: string;
  readonly privateKeyPem: string;
  /** The last element of the CA's chain: the trust bundle (one root, two during a root rotation). */
  readonly rootCertPem: string;
  /** The leaf's first SAN URI (the SPIFFE ID the CA granted). */
  readonly identity: string | undefined;
  readonly serial: string;
  /** Clock time the agent received it; the lifetime counts from here (as Istio's agent). */
  readonly createdAt: number;
  /** The leaf's notAfter (ms since epoch). */
  readonly expiresAt: number;
  /** 1 for the first certificate, +1 per renewal. */
  readonly version: number;
}

export type SecretListener = (secret: WorkloadSecret) => void | Promise<void>;

export interface CertManagerOptions {
  readonly signer: CertSigner;
  readonly keyType: KeyType;
  /** SPIFFE ID put in the CSR as a hint. */
  readonly identityHint: string;
  readonly ttlMs: number;
  readonly gracePeriodRatio: number;
  readonly gracePeriodJitter: number;
  readonly retryInitialMs: number;
  readonly retryMaxMs: number;
  /** The current JWT (read anew for every request: projected tokens rotate); undefined when there is none. */
  readonly readToken?: () => Promise<string | undefined>;
  /** PROV_CERT credentials for the first request, when the workload has no token. */
  readonly provisioned?: () => Promise<{ certChainPem: string; privateKeyPem: string } | undefined>;
  readonly clock?: Clock;
  readonly random?: () => number;
  readonly log?: Logger;
}

export class CertManager {
  readonly #o: CertManagerOptions;
  readonly #clock: Clock;
  readonly #random: () => number;
  readonly #log: Logger;
  readonly #listeners = new Set<SecretListener>();
  #current: WorkloadSecret | undefined;
  #timer: TimerHandle | undefined;
  #failures = 0;
  #stopped = false;
  #running = false;
  #warnedExpired = false;
  /** Clock time of the next planned renewal. */
  #rotateAt: number | undefined;
  readonly #firstReady: Promise<WorkloadSecret>;
  #resolveFirst!: (s: WorkloadSecret) => void;

  constructor(opts: CertManagerOptions) {
    this.#o = opts;
    this.#clock = opts.clock ?? realClock;
    this.#random = opts.random ?? Math.random;
    this.#log = opts.log ?? silentLogger;
    this.#firstReady = new Promise((resolve) => (this.#resolveFirst = resolve));
  }

  /** Requests the first certificate now; everything after runs on timers. */
  start(): void {
    this.#schedule(0);
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  current(): WorkloadSecret | undefined {
    return this.#current;
  }

  /** Resolves with the first certificate. */
  ready(): Promise<WorkloadSecret> {
    return this.#firstReady;
  }

  /** Adds a listener for every new certificate; returns its removal. */
  onUpdate(listener: SecretListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #schedule(delayMs: number): void {
    if (this.#stopped) return;
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = this.#clock.setTimeout(
      () => {
        this.#timer = undefined;
        void this.#tick();
      },
      Math.min(delayMs, MAX_TIMER_MS),
    );
  }

  async #tick(): Promise<void> {
    if (this.#stopped || this.#running) return;
    const cur = this.#current;
    // A wait longer than one timer allows comes back here early: sleep on.
    if (this.#failures === 0 && this.#rotateAt !== undefined && this.#clock.now() < this.#rotateAt) {
      this.#schedule(this.#rotateAt - this.#clock.now());
      return;
    }
    this.#running = true;
    try {
      const { secret, auth } = await this.#issue();
      if (this.#stopped) return;
      this.#failures = 0;
      this.#warnedExpired = false;
      this.#current = secret;
      const delay = rotationDelayMs(
        secret.createdAt,
        secret.expiresAt,
        this.#clock.now(),
        this.#o.gracePeriodRatio,
        jitterOffset(this.#o.gracePeriodJitter, this.#random),
      );
      this.#rotateAt = this.#clock.now() + delay;
      this.#log.info(secret.version === 1 ? 'workload certificate issued' : 'workload certificate rotated', {
        identity: secret.identity,
        auth,
        serial: secret.serial,
        notAfter: new Date(secret.expiresAt).toISOString(),
        version: secret.version,
        nextRotationMs: delay,
      });
      await this.#publish(secret);
      if (secret.version === 1) this.#resolveFirst(secret);
      this.#schedule(delay);
    } catch (err) {
      if (this.#stopped) return;
      const wait = backoffDelayMs(this.#failures, this.#o.retryInitialMs, this.#o.retryMaxMs, this.#random);
      this.#failures++;
      this.#log.error('workload certificate request failed; retrying', {
        error: errorMessage(err),
        attempt: this.#failures,
        retryInMs: wait,
      });
      if (cur && !this.#warnedExpired && this.#clock.now() >= cur.expiresAt) {
        this.#warnedExpired = true;
        this.#log.error('the workload certificate has expired and no new one could be obtained', {
          notAfter: new Date(cur.expiresAt).toISOString(),
        });
      }
      this.#schedule(wait);
    } finally {
      this.#running = false;
    }
  }

  async #publish(secret: WorkloadSecret): Promise<void> {
    for (const l of this.#listeners) {
      try {
        await l(secret);
      } catch (err) {
        this.#log.error('delivering the workload certificate failed', { error: errorMessage(err), version: secret.version });
      }
    }
  }

  /** Credentials to try, in order, for this request. */
  async #credentials(): Promise<CaCredential[]> {
    const out: CaCredential[] = [];
    const cur = this.#current;
    if (cur && this.#clock.now() < cur.expiresAt)
      out.push({ kind: 'cert', certChainPem: cur.certChainPem, privateKeyPem: cur.privateKeyPem });
    else {
      const prov = await this.#o.provisioned?.();
      if (prov) out.push({ kind: 'cert', ...prov });
    }
    const token = await this.#o.readToken?.();
    if (token !== undefined && token !== '') out.push({ kind: 'token', token });
    if (out.length === 0)
      throw new MeshError('UNAUTHENTICATED', 'no credential for the CA: no readable token file, no provisioned or current certificate');
    return out;
  }

  async #issue(): Promise<{ secret: WorkloadSecret; auth: CaCredential['kind'] }> {
    const creds = await this.#credentials();
    const ttlSeconds = Math.max(1, Math.round(this.#o.ttlMs / 1000));
    let lastErr: unknown;
    for (const [i, credential] of creds.entries()) {
      const { csrPem, privateKeyPem, publicKeySpki } = await createKeyAndCsr(this.#o.keyType, this.#o.identityHint);
      try {
        const chain = await this.#o.signer.sign({ csrPem, ttlSeconds, credential });
        return { secret: this.#accept(chain, privateKeyPem, publicKeySpki), auth: credential.kind };
      } catch (err) {
        lastErr = err;
        if (i < creds.length - 1)
          this.#log.warn('CA refused the request; trying the next credential', { auth: credential.kind, error: errorMessage(err) });
      }
    }
    throw lastErr;
  }

  #accept(chain: readonly string[], privateKeyPem: string, spki: Uint8Array): WorkloadSecret {
    const pem = chain.map((c) => (c.endsWith('\n') ? c : `${c}\n`)).join('');
    const certs = parseCertificates(pem, 'CA response');
    const leaf = certs[0]!;
    if (!Buffer.from(leaf.publicKey.rawData).equals(Buffer.from(spki))) {
      throw new MeshError('INTERNAL', 'the CA returned a certificate for a different public key than the CSR');
    }
    const now = this.#clock.now();
    if (leaf.notAfter.getTime() <= now)
      throw new MeshError('INTERNAL', `the CA returned a certificate that expired at ${leaf.notAfter.toISOString()}`);
    // As Istio's agent: the last element is the trust bundle — during a root rotation, several roots.
    const roots = parseCertificates(chain[chain.length - 1]!, 'CA response trust bundle');
    return {
      certChainPem: pem,
      privateKeyPem,
      rootCertPem: roots.map((c) => `${c.toString('pem')}\n`).join(''),
      identity: sanUris(leaf)[0],
      serial: leaf.serialNumber,
      createdAt: now,
      expiresAt: leaf.notAfter.getTime(),
      version: (this.#current?.version ?? 0) + 1,
    };
  }
}
