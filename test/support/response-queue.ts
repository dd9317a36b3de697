import type * as grpc from '@grpc/grpc-js';
import type { EventEmitter } from 'node:events';

/** How a stream ended: its gRPC status (or the error's). */
export interface StreamEnd {
  readonly code: grpc.status;
  readonly details: string;
}

/** Responses of a raw xDS test stream, handed out in order to `next()` callers, optionally by type. */
interface Waiter<R> {
  readonly typeUrl: string | undefined;
  readonly resolve: (r: R) => void;
  readonly reject: (e: Error) => void;
}

export class ResponseQueue<R extends { readonly resp: { readonly typeUrl: string } }> {
  private readonly queue: R[] = [];
  private readonly waiters: Waiter<R>[] = [];
  private endedWith: string | undefined;
  private endState: StreamEnd | undefined;
  /** Resolves with the stream's status (or error) once it ends. */
  readonly ended: Promise<StreamEnd>;

  /** `label` names the stream in errors, e.g. `ADS` or `Delta`; `call` is watched for its end. */
  constructor(
    private readonly label: string,
    call: EventEmitter,
  ) {
    let resolveEnd!: (e: StreamEnd) => void;
    this.ended = new Promise<StreamEnd>((r) => (resolveEnd = r));
    const finish = (e: StreamEnd): void => {
      if (this.endState) return;
      this.endState = e;
      resolveEnd(e);
      this.end(`${e.code} ${e.details}`);
    };
    call.on('status', (st: grpc.StatusObject) => finish({ code: st.code, details: st.details }));
    call.on('error', (err: grpc.ServiceError) => finish({ code: err.code, details: err.details }));
  }

  /** The stream's end, once it has ended. */
  endInfo(): StreamEnd | undefined {
    return this.endState;
  }

  deliver(r: R): void {
    const i = this.waiters.findIndex((w) => w.typeUrl === undefined || w.typeUrl === r.resp.typeUrl);
    if (i >= 0) {
      const [w] = this.waiters.splice(i, 1);
      w?.resolve(r);
    } else this.queue.push(r);
  }

  /** The stream ended: every waiter fails with `reason`, later `next()` calls too. */
  end(reason: string): void {
    this.endedWith = reason;
    for (const w of this.waiters.splice(0)) w.reject(new Error(`${this.label} stream ended: ${reason}`));
  }

  /** The next unconsumed response (of `typeUrl` if given), waiting up to timeoutMs (default 10 s). */
  next(typeUrl?: string, timeoutMs = 10_000): Promise<R> {
    const i = this.queue.findIndex((r) => typeUrl === undefined || r.resp.typeUrl === typeUrl);
    if (i >= 0) {
      const [r] = this.queue.splice(i, 1);
      if (r) return Promise.resolve(r);
    }
    if (this.endedWith !== undefined) return Promise.reject(new Error(`${this.label} stream ended: ${this.endedWith}`));
    return new Promise<R>((resolve, reject) => {
      const timer = setTimeout(() => {
        const k = this.waiters.indexOf(w);
        if (k >= 0) this.waiters.splice(k, 1);
        reject(new Error(`no ${typeUrl ?? this.label} response within ${timeoutMs} ms`));
      }, timeoutMs);
      const w: Waiter<R> = {
        typeUrl,
        resolve: (r) => {
          clearTimeout(timer);
          resolve(r);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      };
      this.waiters.push(w);
    });
  }

  /** Removes and returns every queued (unconsumed) response. */
  drain(): R[] {
    return this.queue.splice(0);
  }
}
