import type { PushRequest } from '../model/index.js';
import type { Connection } from './connection.js';

/** One response written to a proxy. */
export interface SentResponse {
  readonly typeUrl: string;
  readonly nonce: string;
  readonly version: string;
  readonly bytes: number;
  readonly resources: number;
  /** What caused it: a debounced config push, or the proxy's own request (reason proxyrequest). */
  readonly req: PushRequest;
  /** Delta or state of the world. */
  readonly delta: boolean;
}

/**
 * What the xDS server reports as it works. Metrics, propagation tracking and debug views hang off
 * this seam instead of reaching into the server; every method is optional and must not throw
 * (the server catches and logs if one does).
 */
export interface XdsObserver {
  /** A debounced push was published: the new PushContext version and the proxies queued for it. */
  pushStarted?(req: PushRequest, version: string, queued: readonly Connection[]): void;
  /** A queued push to one proxy finished (every watched type sent or skipped). */
  proxyPushed?(conn: Connection, req: PushRequest, queuedAt: number): void;
  responseSent?(conn: Connection, sent: SentResponse): void;
  ackReceived?(conn: Connection, typeUrl: string, nonce: string): void;
  nackReceived?(conn: Connection, typeUrl: string, nonce: string, message: string): void;
  connected?(conn: Connection): void;
  disconnected?(conn: Connection): void;
}
