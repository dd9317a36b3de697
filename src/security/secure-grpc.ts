/**
 * Everything behind `--secureGRPCAddr`: the CA, the authenticators (client cert, JWT_RULE, and a
 * Kubernetes TokenReview slot), the CSR service and a TLS gRPC server for it, to which the caller
 * adds more services (ADS) with `guardStreams` authentication.
 */
import type * as grpc from '@grpc/grpc-js';
import type { Registry } from 'prom-client';
import type { Logger } from '../util/log.js';
import type { Authenticator } from './authn/authenticator.js';
import { clientCertAuthenticator } from './authn/client-cert.js';
import type { PlacementCheck, TrustedNodeAccount } from './authn/impersonation.js';
import { jwtAuthenticator } from './authn/jwt-authenticator.js';
import type { JwksOptions } from './authn/jwks.js';
import type { JwtRule } from './authn/jwt-rule.js';
import { guardStreams } from './authn/stream-guard.js';
import { kubeTokenAuthenticator, type TokenReviewer } from './authn/token-review.js';
import { IstioCa, type CaOptions } from './ca/istio-ca.js';
import type { CsrLimits } from './csr/csr-limits.js';
import { csrService, csrServiceDefinition, type CsrServiceStats } from './csr/csr-service.js';
import { istiodDnsNames, SecureGrpcServer } from './csr/secure-server.js';

export interface SecureGrpcOptions {
  readonly ca: Omit<CaOptions, 'logger'>;
  readonly listen: { readonly host: string; readonly port: number };
  /** istiod's namespace (POD_NAMESPACE, default istio-system): the serving cert is for istiod.<ns>.svc. */
  readonly namespace: string;
  /** ISTIOD_CUSTOM_HOST entries, added to the serving certificate. */
  readonly customHosts?: readonly string[];
  readonly jwtRule?: JwtRule;
  readonly jwks?: JwksOptions;
  readonly trustedNodeAccounts?: readonly TrustedNodeAccount[];
  readonly placement?: PlacementCheck;
  /** Kubernetes TokenReview (supplied by the Kubernetes integration); audiences default to istio-ca. */
  readonly tokenReview?: {
    readonly review: TokenReviewer;
    readonly audiences?: readonly string[];
    readonly requireThirdPartyToken?: boolean;
  };
  /** Services served beside the CSR service, their streaming methods behind authentication (ADS). */
  readonly services?: readonly SecureService[];
  readonly serverOptions?: grpc.ServerOptions;
  /** CSR size and per-identity rate limits (default DEFAULT_CSR_LIMITS). */
  readonly csrLimits?: CsrLimits;
  /** Milliseconds for the CSR rate limiter (tests; default the monotonic clock). */
  readonly csrClock?: () => number;
  readonly registry?: Registry;
  readonly logger: Logger;
}

export interface SecureService {
  readonly definition: grpc.ServiceDefinition;
  readonly implementation: grpc.UntypedServiceImplementation;
  /** Wraps the authenticated implementation once more, outside authentication (e.g. istiod's rate limit comes first). */
  readonly outer?: (guarded: grpc.UntypedServiceImplementation) => grpc.UntypedServiceImplementation;
}

export interface RunningSecureGrpc {
  readonly ca: IstioCa;
  readonly server: SecureGrpcServer;
  /** `host:port` actually bound. */
  readonly address: string;
  readonly authenticators: readonly Authenticator[];
  csrStats(): CsrServiceStats;
  /** Stops timers (root checks, serving-cert renewals); shutting the gRPC server down is the caller's. */
  close(): void;
}

/** The authenticators in istiod's order: client certificate first, then tokens. */
export function buildAuthenticators(
  opts: Pick<SecureGrpcOptions, 'jwtRule' | 'jwks' | 'tokenReview'>,
  trustDomain: string,
): Authenticator[] {
  const out: Authenticator[] = [clientCertAuthenticator(trustDomain)];
  if (opts.tokenReview) {
    const { review, audiences, requireThirdPartyToken } = opts.tokenReview;
    out.push(
      kubeTokenAuthenticator({
        trustDomain,
        audiences: audiences ?? ['istio-ca'],
        review,
        ...(requireThirdPartyToken !== undefined ? { requireThirdPartyToken } : {}),
      }),
    );
  }
  if (opts.jwtRule) out.push(jwtAuthenticator(opts.jwtRule, { trustDomain, ...opts.jwks }));
  return out;
}

/** Creates (or loads) the CA, issues the serving certificate, adds the services and listens. */
export async function startSecureGrpc(opts: SecureGrpcOptions): Promise<RunningSecureGrpc> {
  const log = opts.logger;
  const ca = await IstioCa.create({ ...opts.ca, logger: log.child('ca') });
  const authenticators = buildAuthenticators(opts, ca.trustDomain);
  const csr = csrService({
    ca,
    authenticators,
    impersonation: {
      trustDomain: ca.trustDomain,
      trusted: opts.trustedNodeAccounts ?? [],
      ...(opts.placement ? { placement: opts.placement } : {}),
    },
    logger: log.child('csr'),
    ...(opts.registry ? { registry: opts.registry } : {}),
    ...(opts.csrLimits ? { limits: opts.csrLimits } : {}),
    ...(opts.csrClock ? { now: opts.csrClock } : {}),
  });
  const dnsNames = istiodDnsNames(opts.namespace, opts.customHosts);
  const server = await SecureGrpcServer.create({
    ca,
    dnsNames,
    servingCertTtlMs: opts.ca.workloadCertTtlMs ?? 24 * 3_600_000,
    logger: log,
    ...(opts.serverOptions ? { serverOptions: opts.serverOptions } : {}),
  });
  server.addService(csrServiceDefinition, csr.implementation);
  const guardLog = log.child('xds-authn');
  for (const svc of opts.services ?? []) {
    const guarded = guardStreams(svc.definition, svc.implementation, { authenticators, logger: guardLog });
    server.addService(svc.definition, svc.outer ? svc.outer(guarded) : guarded);
  }
  const port = await server.bind(opts.listen.host, opts.listen.port);
  ca.start();
  const address = `${opts.listen.host}:${port}`;
  log.info('secure gRPC listening (CA + xDS over TLS)', {
    addr: address,
    dnsNames,
    authenticators: authenticators.map((a) => a.type),
    ...(opts.jwtRule ? { jwtIssuer: opts.jwtRule.issuer, jwtAudiences: opts.jwtRule.audiences } : {}),
  });
  return {
    ca,
    server,
    address,
    authenticators,
    csrStats: () => csr.stats(),
    close() {
      ca.stop();
      server.close();
    },
  };
}
