/**
 * An encoded message not yet laid out in memory: its size, and a writer that lays its bytes into a
 * buffer at an offset — the two things grpc-js asks of a serialized message when it frames it
 * (`Buffer.allocUnsafe(byteLength + 5)`, then `copy(frame, 5)`). A response written straight into
 * the transport's frame costs one buffer and one pass over its bytes, not two: for SotW lists of a
 * thousand clusters sent to thousands of proxies that halves the bytes allocated and copied.
 * A Buffer is a WireMessage too.
 */
export interface WireMessage {
  readonly byteLength: number;
  /** Writes the message into `target` at `targetStart`; returns the bytes written (byteLength). */
  copy(target: Uint8Array, targetStart: number): number;
}

/** The message's bytes, laid out in a buffer of their own (tests, logs, anything but the transport). */
export function wireBytes(m: WireMessage): Buffer {
  const b = Buffer.allocUnsafe(m.byteLength);
  m.copy(b, 0);
  return b;
}
