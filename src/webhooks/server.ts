/**
 * The HTTPS admission webhook server (istiod's 15017, `--httpsAddr`): AdmissionReview in, the
 * handler's AdmissionResponse out. Paths as istiod: /validate and /validate/, /inject and /inject/
 * (istiod's /inject/:ENV... path parameters reach the same handler), /httpsReady. The serving
 * certificate is swapped in place (`setSecureContext`) when it is renewed, without a restart.
 *
 * Bad requests never reach a handler: wrong method (405), not JSON (415), no body (400), a body
 * over 6 MiB (413, istiod's limit: twice Kubernetes' own request limit), not an AdmissionReview
 * with a request (400, naming the field). A handler that throws is answered with a denial naming
 * the failure, never a crash.
 */
import { createServer, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Counter, type Registry } from 'prom-client';
import { errorCodeOfHttpStatus, errorMessage, MeshError } from '../util/errors.js';
import type { Logger } from '../util/log.js';
import type { AdmissionHandler, AdmissionRequest, AdmissionResponse } from './admission.js';
import { decodeAdmissionReview, encodeAdmissionReview } from './review.js';
import { ISTIOD_TLS } from '../security/index.js';

/** istiod's kube.MaxRequestBodyBytes. */
export const MAX_ADMISSION_BODY_BYTES = 6 * 1024 * 1024;

/** An AdmissionHandler that also sees the request path (istiod's /inject/:ENV… parameters). */
export type PathAdmissionHandler = (req: AdmissionRequest, path: string) => AdmissionResponse | Promise<AdmissionResponse>;

/** What the server serves: /validate, and /inject when sidecar injection (src/inject) is wired. */
export interface WebhookHandlers {
  readonly validate: AdmissionHandler;
  readonly inject?: PathAdmissionHandler;
  /** Why /inject is not served (named in its 404), when `inject` is absent. */
  readonly injectUnavailable?: string;
}

export interface ServingIdentity {
  /** Leaf first, then intermediates (and the root) — what the API server verifies against caBundle. */
  readonly certChainPem: string;
  readonly privateKeyPem: string;
}

export interface WebhookServerOptions {
  readonly host: string;
  /** 0: a free port. */
  readonly port: number;
  readonly handlers: WebhookHandlers;
  readonly identity: ServingIdentity;
  readonly logger: Logger;
  readonly maxBodyBytes?: number;
  /** For istiod's galley_validation_http_error{status} (requests to /validate refused before a handler). */
  readonly registry?: Registry;
}

type Route = 'validate' | 'inject' | 'ready';

/** istiod's mux: exact paths plus the /inject/ subtree. */
export function routeOf(pathname: string): Route | undefined {
  if (pathname === '/validate' || pathname === '/validate/') return 'validate';
  if (pathname === '/inject' || pathname.startsWith('/inject/')) return 'inject';
  if (pathname === '/httpsReady') return 'ready';
  return undefined;
}

/** A refusal with its HTTP status. */
class HttpError extends MeshError {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(errorCodeOfHttpStatus(status), message);
    this.name = 'HttpError';
  }
}

/** The HTTP status the webhook server answers for an error: a refusal's own, 500 for anything else. */
function httpStatusOf(err: unknown): number {
  return err instanceof HttpError ? err.status : 500;
}

export class WebhookServer {
  readonly #server: Server;
  readonly #opts: WebhookServerOptions;
  readonly #log: Logger;
  readonly #validateHttpErrors: Counter<'status'> | undefined;
  #address = '';

  private constructor(opts: WebhookServerOptions) {
    this.#opts = opts;
    this.#log = opts.logger;
    this.#validateHttpErrors = opts.registry
      ? new Counter({
          name: 'galley_validation_http_error',
          help: 'Resource validation http serve errors',
          labelNames: ['status'],
          registers: [opts.registry],
        })
      : undefined;
    this.#server = createServer(
      { cert: opts.identity.certChainPem, key: opts.identity.privateKeyPem, ...ISTIOD_TLS },
      (req, res) => void this.#serve(req, res),
    );
    // The API server gives a webhook at most 30 s; a client that trickles its request is cut off.
    this.#server.requestTimeout = 30_000;
    this.#server.headersTimeout = 10_000;
    // Failed handshakes (a client that does not trust the CA yet) are routine before caBundle is patched.
    this.#server.on('tlsClientError', (err) => this.#log.debug('webhook TLS handshake failed', { error: errorMessage(err) }));
  }

  static async start(opts: WebhookServerOptions): Promise<WebhookServer> {
    const s = new WebhookServer(opts);
    await new Promise<void>((resolve, reject) => {
      s.#server.once('error', reject);
      s.#server.listen(opts.port, opts.host, () => {
        s.#server.off('error', reject);
        resolve();
      });
    });
    const a = s.#server.address() as AddressInfo;
    s.#address = `${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`;
    return s;
  }

  /** `host:port` bound. */
  get address(): string {
    return this.#address;
  }

  get port(): number {
    return (this.#server.address() as AddressInfo).port;
  }

  /** New serving certificate (renewal, root rotation): new connections use it at once. */
  setIdentity(identity: ServingIdentity): void {
    this.#server.setSecureContext({ cert: identity.certChainPem, key: identity.privateKeyPem, ...ISTIOD_TLS });
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeAllConnections();
    });
  }

  async #serve(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'https://localhost');
    const route = routeOf(url.pathname);
    try {
      if (route === 'ready') return void send(res, 200, 'text/plain', 'ok\n');
      if (route === undefined) throw new HttpError(404, `no webhook at ${url.pathname} (paths: /validate, /inject, /httpsReady)`);
      const handlers = this.#opts.handlers;
      const handler: PathAdmissionHandler | undefined = route === 'validate' ? handlers.validate : handlers.inject;
      if (!handler)
        throw new HttpError(
          404,
          `${url.pathname}: sidecar injection is not available in this meshpilot${handlers.injectUnavailable ? ` (${handlers.injectUnavailable})` : ''}`,
        );
      if (req.method !== 'POST') {
        res.setHeader('allow', 'POST');
        throw new HttpError(405, `${url.pathname}: method ${req.method ?? '?'} not allowed, use POST with an AdmissionReview`);
      }
      const contentType = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
      if (contentType !== 'application/json')
        throw new HttpError(415, `invalid Content-Type ${JSON.stringify(req.headers['content-type'] ?? '')}, want \`application/json\``);
      const body = await readBody(req, this.#opts.maxBodyBytes ?? MAX_ADMISSION_BODY_BYTES);
      if (body.length === 0) throw new HttpError(400, 'no body found');
      const review = decodeAdmissionReview(body);
      if (!review.ok) throw new HttpError(400, `${url.pathname}: ${review.error}`);
      const { request } = review;
      let response: AdmissionResponse;
      try {
        response = await handler(request, url.pathname);
      } catch (err) {
        this.#log.error('admission handler failed', {
          path: url.pathname,
          kind: request.kind.kind,
          namespace: request.namespace,
          name: request.name,
          error: errorMessage(err),
        });
        response = {
          uid: request.uid,
          allowed: false,
          status: { code: 500, message: `internal error in meshpilot's ${route} webhook: ${errorMessage(err)}` },
        };
      }
      send(res, 200, 'application/json', encodeAdmissionReview(review.apiVersion, request.uid, response));
    } catch (err) {
      const status = httpStatusOf(err);
      if (route === 'validate') this.#validateHttpErrors?.inc({ status: String(status) });
      if (status === 500) this.#log.error('webhook request failed', { path: url.pathname, error: errorMessage(err) });
      else this.#log.debug('webhook request refused', { path: url.pathname, status, error: errorMessage(err) });
      send(res, status, 'text/plain', `${errorMessage(err)}\n`);
      // A refused upload may still be streaming in: stop reading it.
      if (!req.complete) res.once('finish', () => req.destroy());
    }
  }
}

function send(res: ServerResponse, status: number, contentType: string, body: string): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) }).end(body);
}

/** The request body as UTF-8, refused with 413 past `limit` bytes (checked on Content-Length first). */
function readBody(req: IncomingMessage, limit: number): Promise<string> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit)
    return Promise.reject(new HttpError(413, `request body of ${declared} bytes is over the limit of ${limit} bytes`));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (c: Buffer): void => {
      size += c.length;
      if (size > limit) {
        req.off('data', onData);
        reject(new HttpError(413, `request body is over the limit of ${limit} bytes`));
        return;
      }
      chunks.push(c);
    };
    req.on('data', onData);
    req.once('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.once('error', (err) => reject(new HttpError(400, `reading the request body failed: ${err.message}`)));
  });
}
