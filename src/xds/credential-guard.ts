/**
 * Gateway credentials (SDS `kubernetes://…` secrets with private keys) go only to proxies whose
 * stream is trusted, as istiod's SecretGen ("proxy … is not authorized to receive credentials.
 * Ensure you are connecting over TLS port and are authenticated."): an authenticated caller on
 * the TLS port (whose identity authorizeProxy already matched to the proxy's namespace), or — our
 * addition, as for the debug types — a loopback peer on the plaintext port. A remote plaintext
 * peer that merely claims to be a gateway gets no secrets.
 */
import type { Proxy } from '../model/index.js';
import type { Logger } from '../util/log.js';
import type { Generator } from './generator.js';
import { streamOriginOf } from '../security/index.js';

/** Wraps the credential generator; refused streams get an empty answer and one warning each. */
export function guardCredentials(gen: Generator, log: Logger): Generator {
  const warned = new WeakSet<Proxy>();
  return {
    generate(proxy, watched, push, req) {
      const origin = streamOriginOf(proxy);
      if (origin?.caller !== undefined || origin?.loopback === true) return gen.generate(proxy, watched, push, req);
      if (!warned.has(proxy)) {
        warned.add(proxy);
        log.warn('proxy is not authorized to receive credentials: connect over the TLS port (15012) and authenticate', { proxy: proxy.id });
      }
      return [];
    },
  };
}
