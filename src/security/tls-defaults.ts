/**
 * TLS settings of istiod's servers (15012 gRPC, 15017 webhooks): `MinVersion: tls.VersionTLS12`
 * and, with `--tls-cipher-suites` unset, Go's default cipher suites (pilot/pkg/bootstrap/server.go,
 * webhook.go). Go's TLS 1.2 defaults are ECDHE only (forward secrecy) with AES-GCM, ChaCha20-Poly1305
 * or AES-CBC-SHA; no RSA key exchange, no 3DES, no CBC-SHA256. Node's own defaults accept more
 * (e.g. AES128-SHA with RSA key exchange, DHE suites), so we name the list explicitly.
 */
import type * as grpc from '@grpc/grpc-js';
import type { SecureContextOptions } from 'node:tls';

/** Go's default TLS 1.2 suites in OpenSSL names, then the TLS 1.3 suites (always on in Go). */
export const ISTIOD_CIPHERS = [
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
  'ECDHE-ECDSA-AES128-SHA',
  'ECDHE-RSA-AES128-SHA',
  'ECDHE-ECDSA-AES256-SHA',
  'ECDHE-RSA-AES256-SHA',
  'TLS_AES_128_GCM_SHA256',
  'TLS_AES_256_GCM_SHA384',
  'TLS_CHACHA20_POLY1305_SHA256',
].join(':');

/** Spread into every server-side secure context (createServer, setSecureContext). */
export const ISTIOD_TLS: Readonly<Pick<SecureContextOptions, 'minVersion' | 'ciphers'>> = {
  minVersion: 'TLSv1.2',
  ciphers: ISTIOD_CIPHERS,
};

/** The part of grpc-js's certificate-provider credentials that builds each secure context. */
interface ContextBuilder {
  calculateSecureContextOptions(): SecureContextOptions | null;
}

/**
 * Applies ISTIOD_TLS to grpc-js server credentials made by createCertificateProviderServerCredentials.
 * grpc-js has no option for versions or ciphers there (only the GRPC_SSL_CIPHER_SUITES env var), but
 * it builds every secure context — the first and each one after a certificate update — through
 * calculateSecureContextOptions, so that is where the settings go. Throws if grpc-js changed shape,
 * rather than silently serving Node's defaults (the TLS e2e test also handshakes for real).
 */
export function withIstiodTls(creds: grpc.ServerCredentials): grpc.ServerCredentials {
  const builder = creds as unknown as Partial<ContextBuilder>;
  const calculate = builder.calculateSecureContextOptions;
  if (typeof calculate !== 'function')
    throw new Error('grpc-js server credentials have no calculateSecureContextOptions: cannot apply the TLS version and cipher settings');
  builder.calculateSecureContextOptions = function (this: ContextBuilder) {
    const base = calculate.call(this);
    return base === null ? null : { ...base, ...ISTIOD_TLS };
  };
  return creds;
}
