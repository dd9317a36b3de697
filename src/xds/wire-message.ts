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

/**
 * A message made of pieces: shared blocks (a view's list of a thousand encoded resources, the
 * same bytes for every proxy of it) between small runs of a stream's own fields. The transport
 * writes the blocks by reference (see grpc-parts.ts), so sending one list to thousands of proxies
 * allocates and copies their own few fields, not the list, per proxy; any other transport lays
 * the whole message out with copy().
 */
export class PiecesMessage implements WireMessage {
  readonly byteLength: number;

  /** Whether any piece is a shared block (else the transport lays it out as any message). */
  readonly shared: boolean;

  constructor(private readonly pieces: readonly Piece[]) {
    let n = 0;
    for (const p of pieces) n += p instanceof Uint8Array ? p.byteLength : p.size;
    this.byteLength = n;
    this.shared = pieces.some((p) => p instanceof Uint8Array);
  }

  copy(target: Uint8Array, targetStart: number): number {
    let at = targetStart;
    for (const p of this.pieces) {
      if (p instanceof Uint8Array) target.set(p, at);
      else p.fill(target, at);
      at += p instanceof Uint8Array ? p.byteLength : p.size;
    }
    return this.byteLength;
  }

  /** The message as byte ranges to write in order: blocks as they are, each run of small pieces laid out in one buffer. */
  parts(): Uint8Array[] {
    const out: Uint8Array[] = [];
    let run: SmallPiece[] = [];
    const flush = (): void => {
      if (run.length === 0) return;
      const buf = new Uint8Array(run.reduce((n, p) => n + p.size, 0));
      let at = 0;
      for (const p of run) {
        p.fill(buf, at);
        at += p.size;
      }
      out.push(buf);
      run = [];
    };
    for (const p of this.pieces) {
      if (p instanceof Uint8Array) {
        flush();
        out.push(p);
      } else {
        run.push(p);
      }
    }
    flush();
    return out;
  }
}

/** Bytes written in place: exactly `size` of them at `start`. */
export interface SmallPiece {
  readonly size: number;
  fill(target: Uint8Array, start: number): void;
}

export type Piece = Uint8Array | SmallPiece;
