/**
 * A SotW ADS stream over a bare node:http2 session, for tests that must see the transport: GOAWAY
 * frames (code, last stream id), whether a stream ended with gRPC trailers (grpc-status) or with an
 * RST_STREAM / a dropped socket. grpc-js hides those behind its own status mapping.
 */
import { create, toBinary } from '@bufbuild/protobuf';
import * as http2 from 'node:http2';
import { DiscoveryRequestSchema } from '../../src/gen/envoy/service/discovery/v3/discovery_pb.js';
import type { AdsNode } from './raw-ads-client.js';
import { ADS_PATH } from './raw-ads-client.js';

export interface H2Goaway {
  readonly errorCode: number;
  readonly lastStreamId: number;
}

export interface H2StreamEnd {
  /** grpc-status from trailers (or trailers-only headers); undefined if none arrived. */
  readonly grpcStatus: number | undefined;
  readonly grpcMessage: string | undefined;
  /** RST_STREAM code seen by node (0 = NGHTTP2_NO_ERROR, i.e. a normal close). */
  readonly rstCode: number;
  /** Did the session die under the stream (socket closed / destroyed)? */
  readonly sessionGone: boolean;
}

export interface H2AdsProbe {
  /** Resolves with the first GOAWAY the server sends on this connection. */
  readonly goaway: Promise<H2Goaway>;
  /** Resolves when the ADS stream has closed. */
  readonly ended: Promise<H2StreamEnd>;
  /** gRPC messages (responses) received so far. */
  responses(): number;
  /** Waits for at least `n` responses (rejects if the stream ends first or after timeoutMs). */
  waitResponses(n: number, timeoutMs?: number): Promise<void>;
  close(): void;
}

function frame(msg: Uint8Array): Buffer {
  const b = Buffer.alloc(5 + msg.length);
  b.writeUInt8(0, 0);
  b.writeUInt32BE(msg.length, 1);
  Buffer.from(msg.buffer, msg.byteOffset, msg.byteLength).copy(b, 5);
  return b;
}

/** Opens one connection and one ADS stream, and sends one request for `typeUrl`/`names`. */
export function openH2AdsProbe(addr: string, node: AdsNode, typeUrl: string, names: readonly string[]): H2AdsProbe {
  const session = http2.connect(`http://${addr}`);
  session.on('error', () => {});
  const goaway = new Promise<H2Goaway>((resolve) => {
    session.once('goaway', (errorCode: number, lastStreamId: number) => resolve({ errorCode, lastStreamId }));
  });
  let sessionGone = false;
  session.once('close', () => (sessionGone = true));
  const stream = session.request({
    ':method': 'POST',
    ':path': ADS_PATH,
    'content-type': 'application/grpc',
    te: 'trailers',
  });
  stream.on('error', () => {});
  let grpcStatus: number | undefined;
  let grpcMessage: string | undefined;
  const takeStatus = (h: http2.IncomingHttpHeaders): void => {
    const s = h['grpc-status'];
    if (typeof s === 'string') grpcStatus = Number(s);
    const m = h['grpc-message'];
    if (typeof m === 'string') grpcMessage = decodeURIComponent(m);
  };
  stream.on('response', takeStatus);
  stream.on('trailers', takeStatus);
  let buf = Buffer.alloc(0);
  let count = 0;
  const waiters = new Set<() => void>();
  stream.on('data', (chunk: Buffer) => {
    buf = Buffer.concat([buf, chunk]);
    while (buf.length >= 5) {
      const len = buf.readUInt32BE(1);
      if (buf.length < 5 + len) break;
      buf = buf.subarray(5 + len);
      count++;
    }
    for (const w of waiters) w();
  });
  const ended = new Promise<H2StreamEnd>((resolve) => {
    stream.once('close', () => {
      resolve({ grpcStatus, grpcMessage, rstCode: stream.rstCode ?? 0, sessionGone: sessionGone || session.destroyed });
      for (const w of waiters) w();
    });
  });
  stream.resume();
  const req = create(DiscoveryRequestSchema, {
    typeUrl,
    resourceNames: [...names],
    node: {
      id: node.id,
      cluster: node.cluster ?? '',
      ...(node.metadata ? { metadata: node.metadata } : {}),
      userAgentName: 'meshpilot-h2-probe',
    },
  });
  stream.write(frame(toBinary(DiscoveryRequestSchema, req)));
  return {
    goaway,
    ended,
    responses: () => count,
    waitResponses(n, timeoutMs = 10_000) {
      return new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no ${n} ADS responses within ${timeoutMs} ms (got ${count})`));
        }, timeoutMs);
        const check = (): void => {
          if (count >= n) {
            clearTimeout(timer);
            waiters.delete(check);
            resolve();
          } else if (stream.closed) {
            clearTimeout(timer);
            waiters.delete(check);
            reject(new Error(`ADS stream closed after ${count} responses`));
          }
        };
        waiters.add(check);
        check();
      });
    },
    close() {
      if (!stream.closed) stream.close(http2.constants.NGHTTP2_CANCEL);
      session.destroy();
    },
  };
}
