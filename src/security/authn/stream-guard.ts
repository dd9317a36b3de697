/**
 * Authentication in front of streaming services on the secure port (ADS on 15012, as istiod's
 * XDS_AUTH): a stream starts only once its caller is authenticated (client certificate or JWT);
 * otherwise it ends at once with UNAUTHENTICATED. Messages the client sends meanwhile stay
 * buffered in the paused call until the handler attaches. The caller is kept per call so the
 * stream handler can check it against the proxy's node (`callerOf`).
 */
import * as grpc from '@grpc/grpc-js';
import type { Logger } from '../../util/log.js';
import { authContextFrom, authenticate, type Authenticator, type Caller } from './authenticator.js';

const callers = new WeakMap<object, Caller>();

/** The authenticated caller of a call admitted by `guardStreams`, if any. */
export function callerOf(call: object): Caller | undefined {
  return callers.get(call);
}

type Bidi = grpc.handleBidiStreamingCall<unknown, unknown>;

/** Wraps every bidi method of `impl` (others pass through unchanged). */
export function guardStreams(
  definition: grpc.ServiceDefinition,
  impl: grpc.UntypedServiceImplementation,
  opts: { authenticators: readonly Authenticator[]; logger: Logger },
): grpc.UntypedServiceImplementation {
  const out: grpc.UntypedServiceImplementation = {};
  for (const [name, fn] of Object.entries(impl)) {
    const def = definition[name];
    if (!(def?.requestStream && def.responseStream)) {
      out[name] = fn;
      continue;
    }
    const handler = fn as Bidi;
    const guarded: Bidi = (call) => {
      // Cancelled, or ended by someone else (e.g. the stream gate on shutdown) while authenticating.
      let gone = false;
      const markGone = (): void => {
        gone = true;
      };
      call.once('cancelled', markGone);
      call.once('close', markGone);
      call.once('finish', markGone);
      const ctx = authContextFrom(call);
      authenticate(ctx, opts.authenticators).then(
        (r) => {
          call.off('close', markGone);
          call.off('finish', markGone);
          if (gone) return;
          if (!r.ok) {
            opts.logger.warn('xDS stream: authentication failed', { peer: ctx.peer, path: call.getPath(), reason: r.reason });
            call.emit(
              'error',
              Object.assign(new Error('authentication failure'), {
                code: grpc.status.UNAUTHENTICATED,
                details: `authentication failure: ${r.reason}`,
              }),
            );
            return;
          }
          callers.set(call, r.caller);
          handler(call);
        },
        (err: unknown) => {
          opts.logger.error('xDS stream: authentication error', { peer: ctx.peer, error: err });
          if (!gone)
            call.emit(
              'error',
              Object.assign(new Error('authentication error'), { code: grpc.status.INTERNAL, details: 'authentication error' }),
            );
        },
      );
    };
    out[name] = guarded as grpc.UntypedHandleCall;
  }
  return out;
}
