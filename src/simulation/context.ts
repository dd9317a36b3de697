import type { DynamicMetadata, Headers } from './matchers.js';

/** The downstream connection as Envoy's filters see it once the listener filters have run. */
export interface Downstream {
  /** Local (original destination) address and port. */
  readonly dstIp: string;
  readonly dstPort: number;
  readonly srcIp: string | undefined;
  readonly srcPort: number | undefined;
  /** What the listener filters detected: `tls` (tls_inspector) or `raw_buffer`. */
  readonly transportProtocol: string;
  readonly sni: string | undefined;
  /** ALPN from tls_inspector, or http/1.1 / h2c from http_inspector on plaintext. */
  readonly alpn: readonly string[];
  /** What the caller sent. */
  readonly tls: 'none' | 'mtls' | 'tls';
  readonly protocol: 'http' | 'http2' | 'tcp';
}

/** After the filter chain: whether this Envoy terminated TLS and whom the peer certificate names. */
export interface Connection extends Downstream {
  readonly tlsTerminated: boolean;
  /** The verified peer principal: only with TLS terminated here and a client certificate. */
  readonly peerPrincipal: string | undefined;
  readonly peerCertificate: boolean;
}

/** One HTTP request as the HCM's filters and router see it. */
export interface HttpRequest {
  readonly headers: Headers;
  readonly authority: string;
  readonly path: string;
  readonly method: string;
  readonly metadata: DynamicMetadata;
}
