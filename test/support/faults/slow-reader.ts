/**
 * A SotW ADS client over a bare node:http2 session that can stop reading: while paused, node
 * stops consuming the stream, so no WINDOW_UPDATE goes out and the server's writes block on HTTP/2
 * flow control once `windowBytes` are in flight — a proxy that stopped reading. Every response
 * read is decoded and ACKed as a client does (so the server sends the next one).
 */
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import * as http2 from 'node:http2';
import {
  DiscoveryRequestSchema,
  DiscoveryResponseSchema,
  type DiscoveryResponse,
} from '../../../src/gen/envoy/service/discovery/v3/discovery_pb.js';
import { ADS_PATH, type AdsNode } from '../raw-ads-client.js';

export interface SlowReader {
  /** Responses read (decoded) so far, oldest first. */
  readonly received: readonly DiscoveryResponse[];
  /** Stops reading: no more data consumed, no window updates. */
  pause(): void;
  /** Reads again (and ACKs what it reads). */
  resume(): void;
  /** Resolves once a read response satisfies `pred` (rejects after timeoutMs or when the stream ends). */
  waitFor(pred: (r: DiscoveryResponse) => boolean, timeoutMs?: number): Promise<DiscoveryResponse>;
  close(): void;
}

function frame(msg: Uint8Array): Buffer {
  const b = Buffer.alloc(5 + msg.length);
  b.writeUInt32BE(msg.length, 1);
  b.set(msg, 5);
  return b;
}

/**
 * Opens its own connection with `windowBytes` as the HTTP/2 receive window (stream and
 * connection) and subscribes to each `type → names` (an empty list: wildcard).
 */
export function openSlowReader(
  addr: string,
  node: AdsNode,
  subscriptions: ReadonlyMap<string, readonly string[]>,
  windowBytes = 65_535,
): SlowReader {
  const session = http2.connect(`http://${addr}`, { settings: { initialWindowSize: windowBytes } });
  session.on('error', () => {});
  session.on('connect', () => session.setLocalWindowSize(windowBytes));
  const stream = session.request({ ':method': 'POST', ':path': ADS_PATH, 'content-type': 'application/grpc', te: 'trailers' });
  stream.on('error', () => {});
  const received: DiscoveryResponse[] = [];
  const waiters = new Set<() => void>();
  let first = true;
  const send = (typeUrl: string, names: readonly string[], versionInfo = '', responseNonce = ''): void => {
    const req = create(DiscoveryRequestSchema, {
      typeUrl,
      resourceNames: [...names],
      versionInfo,
      responseNonce,
      ...(first
        ? {
            node: {
              id: node.id,
              cluster: node.cluster ?? '',
              ...(node.metadata ? { metadata: node.metadata } : {}),
              userAgentName: 'meshpilot-slow-reader',
            },
          }
        : {}),
    });
    first = false;
    stream.write(frame(toBinary(DiscoveryRequestSchema, req)));
  };
  let buf = Buffer.alloc(0);
  stream.on('data', (chunk: Buffer) => {
    buf = Buffer.concat([buf, chunk]);
    while (buf.length >= 5) {
      const len = buf.readUInt32BE(1);
      if (buf.length < 5 + len) break;
      const resp = fromBinary(DiscoveryResponseSchema, buf.subarray(5, 5 + len));
      buf = buf.subarray(5 + len);
      received.push(resp);
      if (!stream.closed) send(resp.typeUrl, subscriptions.get(resp.typeUrl) ?? [], resp.versionInfo, resp.nonce);
    }
    for (const w of waiters) w();
  });
  stream.on('close', () => {
    for (const w of waiters) w();
  });
  for (const [typeUrl, names] of subscriptions) send(typeUrl, names);
  return {
    received,
    pause: () => void stream.pause(),
    resume: () => void stream.resume(),
    waitFor(pred, timeoutMs = 10_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`slow reader: no matching response within ${timeoutMs} ms (${received.length} read)`));
        }, timeoutMs);
        const check = (): void => {
          const hit = received.findLast(pred);
          if (hit || stream.closed) {
            clearTimeout(timer);
            waiters.delete(check);
            if (hit) resolve(hit);
            else reject(new Error(`slow reader: stream closed after ${received.length} responses`));
          }
        };
        waiters.add(check);
        check();
      });
    },
    close() {
      stream.close();
      session.destroy();
    },
  };
}
