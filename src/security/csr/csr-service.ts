/**
 * `istio.v1.auth.IstioCertificateService/CreateCertificate` (istiod's security/pkg/server/ca):
 * authenticate the caller, take the SANs from its identity (or an authorized impersonation),
 * sign, answer with the chain leaf first and the trust bundle last. Errors as istiod words them:
 * UNAUTHENTICATED "request authenticate failure", INVALID_ARGUMENT/INTERNAL "CSR signing error (…)";
 * our authentication message also says why (which credential was missing or wrong).
 */
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import * as grpc from '@grpc/grpc-js';
import { Counter, type Registry } from 'prom-client';
import {
  IstioCertificateRequestSchema,
  IstioCertificateResponseSchema,
  type IstioCertificateRequest,
  type IstioCertificateResponse,
} from '../../gen/security/v1alpha1/ca_pb.js';
import { errorCodeOf, grpcStatus, type ErrorCode } from '../../util/errors.js';
import type { Logger } from '../../util/log.js';
import { CaError } from '../ca/errors.js';
import type { IstioCa } from '../ca/istio-ca.js';
import { formatGoDurationMs } from '../../util/duration.js';
import { authContextFrom, authenticate, type Authenticator } from '../authn/authenticator.js';
import { IMPERSONATED_IDENTITY, impersonationRefusal, type ImpersonationPolicy } from '../authn/impersonation.js';
import { csrSizeRefusal, DEFAULT_CSR_LIMITS, PerIdentityRateLimiter, type CsrLimits } from './csr-limits.js';

export const CSR_SERVICE = 'istio.v1.auth.IstioCertificateService';
export const CREATE_CERTIFICATE_PATH = `/${CSR_SERVICE}/CreateCertificate`;

export const csrServiceDefinition = {
  CreateCertificate: {
    path: CREATE_CERTIFICATE_PATH,
    requestStream: false,
    responseStream: false,
    requestSerialize: (m: IstioCertificateRequest): Buffer => Buffer.from(toBinary(IstioCertificateRequestSchema, m)),
    requestDeserialize: (b: Buffer): IstioCertificateRequest => fromBinary(IstioCertificateRequestSchema, b),
    responseSerialize: (m: IstioCertificateResponse): Buffer => Buffer.from(toBinary(IstioCertificateResponseSchema, m)),
    responseDeserialize: (b: Buffer): IstioCertificateResponse => fromBinary(IstioCertificateResponseSchema, b),
  },
} satisfies grpc.ServiceDefinition;

export interface CsrServiceOptions {
  readonly ca: IstioCa;
  readonly authenticators: readonly Authenticator[];
  readonly impersonation: ImpersonationPolicy;
  readonly logger: Logger;
  /** Where istiod's citadel_server_* counters go (optional). */
  readonly registry?: Registry;
  /** CSR size and per-identity rate (default DEFAULT_CSR_LIMITS). */
  readonly limits?: CsrLimits;
  /** Milliseconds, for the rate limiter (default: the monotonic clock). */
  readonly now?: () => number;
}

export interface CsrServiceStats {
  readonly csr: number;
  readonly authnFailures: number;
  readonly signErrors: number;
  readonly issued: number;
  /** Refused for size or rate before signing. */
  readonly limited: number;
}

function csrMetrics(registry: Registry | undefined) {
  const registers = registry ? [registry] : [];
  return {
    csr: new Counter({ name: 'citadel_server_csr_count', help: 'The number of CSRs received by Citadel server.', registers }),
    authn: new Counter({ name: 'citadel_server_authentication_failure_count', help: 'The number of authentication failures.', registers }),
    signErr: new Counter({
      name: 'citadel_server_csr_sign_error_count',
      help: 'The number of errors occurred when signing the CSR.',
      labelNames: ['error'],
      registers,
    }),
    success: new Counter({
      name: 'citadel_server_success_cert_issuance_count',
      help: 'The number of certificates issuances that have succeeded.',
      registers,
    }),
  };
}

/** The error a handler answers with: the status (from the code, at this edge only) and its details. */
const fail = (code: ErrorCode, details: string): Partial<grpc.StatusObject> & Error =>
  Object.assign(new Error(details), { code: grpcStatus(code) as grpc.status, details });

/** The CreateCertificate handler plus counters (for tests and debug). */
export function csrService(opts: CsrServiceOptions): { implementation: grpc.UntypedServiceImplementation; stats(): CsrServiceStats } {
  const m = csrMetrics(opts.registry);
  const counts = { csr: 0, authnFailures: 0, signErrors: 0, issued: 0, limited: 0 };
  const log = opts.logger;
  const limits = opts.limits ?? DEFAULT_CSR_LIMITS;
  const rate = new PerIdentityRateLimiter(limits.perIdentityPerMinute);
  const now = opts.now ?? (() => performance.now());

  const handle = async (
    call: grpc.ServerUnaryCall<IstioCertificateRequest, IstioCertificateResponse>,
  ): Promise<IstioCertificateResponse> => {
    counts.csr++;
    m.csr.inc();
    const ctx = authContextFrom(call);
    // Before authentication: a huge CSR costs nothing but this comparison.
    const tooBig = csrSizeRefusal(Buffer.byteLength(call.request.csr, 'utf8'), limits);
    if (tooBig !== undefined) {
      counts.limited++;
      log.warn('CSR refused: too large', { peer: ctx.peer, reason: tooBig });
      throw fail('INVALID_ARGUMENT', `CSR signing error (${tooBig})`);
    }
    const authn = await authenticate(ctx, opts.authenticators);
    if (!authn.ok) {
      counts.authnFailures++;
      m.authn.inc();
      log.warn('CSR: authentication failed', { peer: ctx.peer, reason: authn.reason });
      throw fail('UNAUTHENTICATED', `request authenticate failure: ${authn.reason}`);
    }
    let sans = authn.caller.identities;
    const impersonated = call.request.metadata?.[IMPERSONATED_IDENTITY];
    if (typeof impersonated === 'string' && impersonated !== '') {
      const refusal = await impersonationRefusal(opts.impersonation, authn.caller, impersonated);
      if (refusal !== undefined) {
        counts.authnFailures++;
        m.authn.inc();
        // Opaque to the caller (as istiod), the reason in our log.
        const pod = authn.caller.pod;
        log.warn('CSR: impersonation refused', {
          peer: ctx.peer,
          caller: authn.caller.identities,
          ...(pod ? { callerPod: pod.name, ...(pod.node ? { callerNode: pod.node } : {}) } : {}),
          impersonated,
          reason: refusal,
        });
        throw fail('UNAUTHENTICATED', 'request impersonation authentication failure');
      }
      sans = [impersonated];
    }
    // Per issued identity (after impersonation), so a node agent signing for many workloads is not one bucket.
    const identity = sans.join(',');
    const waitMs = rate.take(identity, now());
    if (waitMs !== undefined) {
      counts.limited++;
      log.warn('CSR refused: rate limit', { peer: ctx.peer, identity, perMinute: limits.perIdentityPerMinute });
      throw fail(
        'RESOURCE_EXHAUSTED',
        `too many CSRs for ${identity}: at most ${limits.perIdentityPerMinute} per minute; retry in ${Math.ceil(waitMs / 1000)}s`,
      );
    }
    const ttlMs = Number(call.request.validityDuration) * 1000;
    try {
      const certChain = await opts.ca.sign(call.request.csr, { subjectIds: sans, ttlMs });
      counts.issued++;
      m.success.inc();
      log.info('CSR signed', {
        peer: ctx.peer,
        sans,
        requestedTtl: formatGoDurationMs(ttlMs),
        source: authn.caller.source,
        ...(ctx.clusterId ? { clusterId: ctx.clusterId } : {}),
      });
      return create(IstioCertificateResponseSchema, { certChain });
    } catch (err) {
      counts.signErrors++;
      const type = err instanceof CaError ? err.type : 'CERT_GEN_ERROR';
      m.signErr.inc({ error: type });
      log.warn('CSR signing error', { peer: ctx.peer, sans, type, error: (err as Error).message });
      throw fail(errorCodeOf(err), `CSR signing error (${(err as Error).message})`);
    }
  };

  const CreateCertificate: grpc.handleUnaryCall<IstioCertificateRequest, IstioCertificateResponse> = (call, callback) => {
    handle(call).then(
      (res) => callback(null, res),
      (err: unknown) => callback(err as grpc.ServerErrorResponse),
    );
  };
  return { implementation: { CreateCertificate } as grpc.UntypedServiceImplementation, stats: () => ({ ...counts }) };
}
