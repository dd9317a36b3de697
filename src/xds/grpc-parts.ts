import type { ServerHttp2Stream } from 'node:http2';
import { BaseServerInterceptingCall } from '@grpc/grpc-js/build/src/server-interceptors.js';
import { PiecesMessage } from './wire-message.js';

/** The members of grpc-js's server call this relies on (checked before use). */
interface ServerCallInternals {
  readonly stream: ServerHttp2Stream;
  readonly maxSendMessageSize: number;
  maybeSendMetadata(): void;
  serializeMessage(value: unknown): Buffer;
}

let installed: boolean | undefined;
const ignore = (): void => {};

/**
 * Lets grpc-js write a response made of shared blocks without laying it out per stream. grpc-js
 * frames every message by allocating a buffer of its size and copying it in; for the same list of
 * a thousand clusters sent to thousands of proxies that is gigabytes allocated and copied, and the
 * garbage collector's work on those buffers was most of the CPU of a mesh-wide SotW push. Here a
 * PiecesMessage with shared blocks is written as its parts: the 5-byte gRPC prefix and the
 * stream's own fields are small buffers, the blocks go to the HTTP/2 stream by reference, and the
 * last part is handed back to grpc-js, which writes it (with its completion callback) in order
 * after them. Any other message takes grpc-js's own path. Returns whether the hook is in place:
 * a grpc-js whose server call lacks these members keeps its own path for everything.
 */
export function installSharedBlockWrites(): boolean {
  if (installed !== undefined) return installed;
  const proto = BaseServerInterceptingCall.prototype as unknown as Partial<ServerCallInternals>;
  const original = proto.serializeMessage;
  if (typeof original !== 'function' || typeof proto.maybeSendMetadata !== 'function') return (installed = false);
  proto.serializeMessage = function (this: ServerCallInternals, value: unknown): Buffer {
    // A message over the send limit takes grpc-js's path, which fails the call as it should.
    const tooBig = this.maxSendMessageSize !== -1 && value instanceof PiecesMessage && value.byteLength > this.maxSendMessageSize;
    if (!(value instanceof PiecesMessage) || !value.shared || tooBig) return original.call(this, value);
    const parts = value.parts();
    // Headers go first: grpc-js sends them after serializing, just before it writes the message.
    this.maybeSendMetadata();
    const prefix = Buffer.allocUnsafe(5);
    prefix.writeUInt8(0, 0);
    prefix.writeUInt32BE(value.byteLength, 1);
    // A failed write fails grpc-js's own write of the last part too, which ends the call.
    this.stream.write(prefix, ignore);
    for (let i = 0; i < parts.length - 1; i++) this.stream.write(parts[i], ignore);
    const last = parts[parts.length - 1] ?? new Uint8Array(0);
    return Buffer.from(last.buffer, last.byteOffset, last.byteLength);
  };
  return (installed = true);
}
