/**
 * Client of istiod's `istio.v1.auth.IstioCertificateService/CreateCertificate` over TLS. The caller
 * authenticates with a bearer JWT in `authorization` metadata (first issuance) or with its current
 * certificate as the TLS client certificate (renewal). Errors name the CA and the gRPC status, never
 * the token or any key.
 */
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import * as grpc from '@grpc/grpc-js';
import {
  IstioCertificateRequestSchema,
  IstioCertificateResponseSchema,
  type IstioCertificateResponse,
} from '../gen/security/v1alpha1/ca_pb.js';
import { errorCodeOfGrpcStatus, MeshError } from '../util/errors.js';

export const CREATE_CERTIFICATE_PATH = '/istio.v1.auth.IstioCertificateService/CreateCertificate';

/** How a CSR is authenticated. */
export type CaCredential =
  | { readonly kind: 'token'; readonly token: string }
  | { readonly kind: 'cert'; readonly certChainPem: string; readonly privateKeyPem: string };

export interface SignRequest {
  readonly csrPem: string;
  readonly ttlSeconds: number;
  readonly credential: CaCredential;
}

/** What the cert manager needs from a CA; tests substitute their own. */
export interface CertSigner {
  /** The certificate chain, leaf first, root last. */
  sign(req: SignRequest): Promise<string[]>;
}

export interface ControlPlaneTls {
  /** PEM roots the server's certificate must chain to. */
  readonly rootCertPem: string;
  /** The name the server certificate is checked against (and sent as SNI/authority). */
  readonly serverName: string;
  readonly clientCertChainPem?: string;
  readonly clientKeyPem?: string;
}

/** grpc-js credentials + channel options to dial istiod by IP while checking its certificate for `serverName`. */
export function controlPlaneChannel(tls: ControlPlaneTls): { credentials: grpc.ChannelCredentials; options: grpc.ChannelOptions } {
  const credentials = grpc.credentials.createSsl(
    Buffer.from(tls.rootCertPem),
    tls.clientKeyPem !== undefined ? Buffer.from(tls.clientKeyPem) : null,
    tls.clientCertChainPem !== undefined ? Buffer.from(tls.clientCertChainPem) : null,
  );
  return { credentials, options: { 'grpc.ssl_target_name_override': tls.serverName, 'grpc.default_authority': tls.serverName } };
}

export interface CaClientOptions {
  readonly caAddr: string;
  /** The roots to trust, read for every request (the file may be updated when the mesh root rotates). */
  readonly rootCertPem: () => Promise<string>;
  readonly serverName: string;
  readonly clusterId?: string;
  /** Per-call deadline (default 10 s). */
  readonly timeoutMs?: number;
}

/** A CertSigner that talks to a real CA; one connection per request (renewal presents a new client cert). */
export function caClient(opts: CaClientOptions): CertSigner {
  return {
    async sign(req: SignRequest): Promise<string[]> {
      const { credentials, options } = controlPlaneChannel({
        rootCertPem: await opts.rootCertPem(),
        serverName: opts.serverName,
        ...(req.credential.kind === 'cert'
          ? { clientCertChainPem: req.credential.certChainPem, clientKeyPem: req.credential.privateKeyPem }
          : {}),
      });
      const client = new grpc.Client(opts.caAddr, credentials, options);
      const md = new grpc.Metadata();
      if (req.credential.kind === 'token') md.set('authorization', `Bearer ${req.credential.token}`);
      if (opts.clusterId !== undefined) md.set('clusterid', opts.clusterId); // istiod reads the caller's cluster from this header
      const message = create(IstioCertificateRequestSchema, { csr: req.csrPem, validityDuration: BigInt(req.ttlSeconds) });
      try {
        const res = await new Promise<IstioCertificateResponse>((resolve, reject) => {
          client.makeUnaryRequest(
            CREATE_CERTIFICATE_PATH,
            (m: typeof message) => Buffer.from(toBinary(IstioCertificateRequestSchema, m)),
            (b: Buffer) => fromBinary(IstioCertificateResponseSchema, b),
            message,
            md,
            { deadline: Date.now() + (opts.timeoutMs ?? 10_000) },
            (err, value) => (err || !value ? reject(err ?? new Error('empty response')) : resolve(value)),
          );
        });
        if (res.certChain.length === 0) throw new MeshError('INTERNAL', `CA at ${opts.caAddr} returned an empty certificate chain`);
        return res.certChain;
      } catch (err) {
        if (err instanceof MeshError) throw err;
        const e = err as Partial<grpc.ServiceError>;
        const code = errorCodeOfGrpcStatus(e.code);
        const status = e.code !== undefined ? grpc.status[e.code] : 'error';
        throw new MeshError(code, `CA at ${opts.caAddr} (${req.credential.kind} auth): ${status}: ${e.details ?? (err as Error).message}`, {
          cause: err,
        });
      } finally {
        client.close();
      }
    },
  };
}
