/**
 * The TLS gRPC server of `--secureGRPCAddr` (istiod's 15012): a serving certificate the CA issues
 * for `istiod.<ns>.svc` and istiod's other known names (plus ISTIOD_CUSTOM_HOST), presented with
 * the full chain up to the root; client certificates are requested but not required (a caller may
 * instead present a JWT) and verified against the CA's trust bundle. The certificate is renewed
 * at half its lifetime and re-issued when the roots change; grpc-js picks both up without a restart.
 */
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../../util/log.js';
import type { IstioCa, KeyCert } from '../ca/istio-ca.js';
import { withIstiodTls } from '../tls-defaults.js';

type CaListener = Parameters<grpc.experimental.CertificateProvider['addCaCertificateListener']>[0];
type IdentityListener = Parameters<grpc.experimental.CertificateProvider['addIdentityCertificateListener']>[0];

/** A CertificateProvider fed from memory; it notifies asynchronously, as grpc-js's file watcher does. */
class MemoryCertificateProvider implements grpc.experimental.CertificateProvider {
  private ca: { caCertificate: Buffer } | undefined;
  private identity: { certificate: Buffer; privateKey: Buffer } | undefined;
  private readonly caListeners = new Set<CaListener>();
  private readonly identityListeners = new Set<IdentityListener>();

  setCa(pem: string): void {
    this.ca = { caCertificate: Buffer.from(pem) };
    for (const l of this.caListeners) queueMicrotask(() => l(this.ca ?? null));
  }
  setIdentity(certChainPem: string, privateKeyPem: string): void {
    this.identity = { certificate: Buffer.from(certChainPem), privateKey: Buffer.from(privateKeyPem) };
    for (const l of this.identityListeners) queueMicrotask(() => l(this.identity ?? null));
  }
  addCaCertificateListener(l: CaListener): void {
    this.caListeners.add(l);
    if (this.ca) queueMicrotask(() => l(this.ca ?? null));
  }
  removeCaCertificateListener(l: CaListener): void {
    this.caListeners.delete(l);
  }
  addIdentityCertificateListener(l: IdentityListener): void {
    this.identityListeners.add(l);
    if (this.identity) queueMicrotask(() => l(this.identity ?? null));
  }
  removeIdentityCertificateListener(l: IdentityListener): void {
    this.identityListeners.delete(l);
  }
}

/** istiod's getDNSNames: custom hosts, then istiod / istiod-remote / istio-pilot `.<ns>.svc`; sorted, unique. */
export function istiodDnsNames(namespace: string, customHosts: readonly string[] = [], revision?: string): string[] {
  const known = ['istiod', 'istiod-remote', 'istio-pilot', ...(revision && revision !== 'default' ? [`istiod-${revision}`] : [])];
  return [...new Set([...customHosts.filter(Boolean), ...known.map((h) => `${h}.${namespace}.svc`)])].sort();
}

export interface SecureServerOptions {
  readonly ca: IstioCa;
  readonly dnsNames: readonly string[];
  /** Lifetime of the serving certificate (renewed at half of it). */
  readonly servingCertTtlMs: number;
  readonly serverOptions?: grpc.ServerOptions;
  readonly logger: Logger;
}

export class SecureGrpcServer {
  readonly server: grpc.Server;
  private readonly provider = new MemoryCertificateProvider();
  private renewTimer: NodeJS.Timeout | undefined;
  private readonly unsubscribe: () => void;
  private servingNotAfter: Date | undefined;
  private serving: KeyCert | undefined;
  private readonly servingListeners = new Set<(kc: KeyCert) => void>();

  private constructor(private readonly opts: SecureServerOptions) {
    this.server = new grpc.Server(opts.serverOptions ?? {});
    this.unsubscribe = opts.ca.onRootsChange((pem) => {
      this.provider.setCa(pem);
      this.renew('roots changed');
    });
  }

  /** Issues the first serving certificate; call `bind` to listen. */
  static async create(opts: SecureServerOptions): Promise<SecureGrpcServer> {
    const s = new SecureGrpcServer(opts);
    s.provider.setCa(opts.ca.trustBundlePem());
    await s.issue();
    return s;
  }

  get dnsNames(): readonly string[] {
    return this.opts.dnsNames;
  }

  /** When the current serving certificate expires. */
  get servingCertNotAfter(): Date | undefined {
    return this.servingNotAfter;
  }

  /**
   * Called with the current serving certificate and each one issued after it (renewal, root
   * rotation): the HTTPS webhook server presents the same one, as istiod's 15017 shares 15012's.
   * Returns an unsubscribe.
   */
  onServingCert(listener: (kc: KeyCert) => void): () => void {
    this.servingListeners.add(listener);
    if (this.serving) listener(this.serving);
    return () => void this.servingListeners.delete(listener);
  }

  addService(definition: grpc.ServiceDefinition, impl: grpc.UntypedServiceImplementation): void {
    this.server.addService(definition, impl);
  }

  /** Listens on host:port (port 0: a free one); resolves with the bound port. */
  bind(host: string, port: number): Promise<number> {
    // istiod's tls.Config: TLS 1.2 at least, Go's default cipher suites.
    const creds = withIstiodTls(grpc.experimental.createCertificateProviderServerCredentials(this.provider, this.provider, false));
    const h = host.includes(':') ? `[${host}]` : host;
    return new Promise((resolve, reject) => this.server.bindAsync(`${h}:${port}`, creds, (err, p) => (err ? reject(err) : resolve(p))));
  }

  /** Stops renewals and the root subscription (the gRPC server itself is shut down by the caller). */
  close(): void {
    this.unsubscribe();
    if (this.renewTimer) clearTimeout(this.renewTimer);
    this.renewTimer = undefined;
  }

  private renew(why: string): void {
    this.issue().then(
      () =>
        this.opts.logger.info('secure gRPC: serving certificate renewed', { reason: why, notAfter: this.servingNotAfter?.toISOString() }),
      (err: unknown) => {
        this.opts.logger.error('secure gRPC: serving certificate renewal failed; retrying in 1m', { error: err });
        this.schedule(60_000);
      },
    );
  }

  private async issue(): Promise<void> {
    const kc = await this.opts.ca.generateKeyCert(this.opts.dnsNames, this.opts.servingCertTtlMs);
    this.provider.setIdentity(kc.certChainPem, kc.privateKeyPem);
    this.servingNotAfter = kc.notAfter;
    this.serving = kc;
    for (const l of this.servingListeners) l(kc);
    this.schedule(Math.max(1000, (kc.notAfter.getTime() - Date.now()) / 2));
  }

  private schedule(ms: number): void {
    if (this.renewTimer) clearTimeout(this.renewTimer);
    // setTimeout takes at most 2^31-1 ms; a longer wait is re-armed when it fires.
    const wait = Math.min(ms, 2 ** 31 - 1);
    this.renewTimer = setTimeout(() => (wait < ms ? this.schedule(ms - wait) : this.renew('half of its lifetime passed')), wait);
    this.renewTimer.unref();
  }
}
