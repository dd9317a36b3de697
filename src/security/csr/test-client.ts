/** A real gRPC client of the CSR service over TLS, as istio-agent calls it (tests only). */
import assert from 'node:assert/strict';
import { create } from '@bufbuild/protobuf';
import * as grpc from '@grpc/grpc-js';
import { IstioCertificateRequestSchema, type IstioCertificateResponse } from '../../gen/security/v1alpha1/ca_pb.js';
import { csrServiceDefinition } from './csr-service.js';

export interface CsrCallOptions {
  readonly address: string;
  readonly rootPem: string;
  readonly csrPem: string;
  readonly token?: string;
  /** Client certificate (renewal). */
  readonly clientCert?: { readonly certChainPem: string; readonly keyPem: string };
  readonly ttlSeconds?: number;
  readonly metadata?: Record<string, string>;
  /** The caller's cluster (istio-agent's ClusterID header; default Kubernetes). */
  readonly clusterId?: string;
  readonly serverName?: string;
  /** Plaintext (to show a port does not serve the CA). */
  readonly insecure?: boolean;
}

export type CsrCallResult = { ok: true; certChain: string[] } | { ok: false; code: grpc.status; details: string };

const Client = grpc.makeGenericClientConstructor(csrServiceDefinition, 'IstioCertificateService');

export async function callCreateCertificate(o: CsrCallOptions): Promise<CsrCallResult> {
  const creds = o.insecure
    ? grpc.credentials.createInsecure()
    : o.clientCert
      ? grpc.credentials.createSsl(Buffer.from(o.rootPem), Buffer.from(o.clientCert.keyPem), Buffer.from(o.clientCert.certChainPem))
      : grpc.credentials.createSsl(Buffer.from(o.rootPem));
  const client = new Client(o.address, creds, {
    'grpc.ssl_target_name_override': o.serverName ?? 'istiod.istio-system.svc',
    'grpc.default_authority': o.serverName ?? 'istiod.istio-system.svc',
  });
  const md = new grpc.Metadata();
  md.set('ClusterID', o.clusterId ?? 'Kubernetes');
  if (o.token) md.set('authorization', `Bearer ${o.token}`);
  const req = create(IstioCertificateRequestSchema, {
    csr: o.csrPem,
    validityDuration: BigInt(o.ttlSeconds ?? 0),
    ...(o.metadata ? { metadata: o.metadata } : {}),
  });
  try {
    return await new Promise<CsrCallResult>((resolve) => {
      (
        client as unknown as {
          CreateCertificate: (
            r: unknown,
            m: grpc.Metadata,
            o: grpc.CallOptions,
            cb: (e: grpc.ServiceError | null, r?: IstioCertificateResponse) => void,
          ) => void;
        }
      ).CreateCertificate(req, md, { deadline: Date.now() + 10_000 }, (err, res) =>
        resolve(err ? { ok: false, code: err.code, details: err.details } : { ok: true, certChain: res?.certChain ?? [] }),
      );
    });
  } finally {
    client.close();
  }
}

/** Asserts a refusal with `code` and details matching `re`. */
export function expectCsrError(r: CsrCallResult, code: grpc.status, re: RegExp): void {
  assert.ok(!r.ok, 'a certificate was issued');
  assert.equal(grpc.status[r.code], grpc.status[code], r.details);
  assert.match(r.details, re);
}
