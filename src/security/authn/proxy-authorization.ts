import type { Proxy } from '../../model/index.js';
import type { Caller } from './authenticator.js';
import { parseSpiffeId } from '../spiffe.js';
import { callerOf } from './stream-guard.js';

/** Who opened the stream a Proxy came in on: its authenticated caller (15012) and whether it is local. */
export interface StreamOrigin {
  readonly caller?: Caller;
  readonly loopback: boolean;
}

/** Keyed by the Proxy object the stream's Connection keeps (gone with it). */
const streamOrigins = new WeakMap<Proxy, StreamOrigin>();

/** The origin recorded by authorizeProxy for this proxy's stream; undefined if it never ran. */
export function streamOriginOf(proxy: Proxy): StreamOrigin | undefined {
  return streamOrigins.get(proxy);
}

function peerOf(call: object): string {
  const getPeer = (call as { getPeer?: () => string }).getPeer;
  return typeof getPeer === 'function' ? getPeer.call(call) : '';
}

/** grpc-js peers look like `127.0.0.1:5555`, `[::1]:5555` or `ipv4:…`/`ipv6:[…]:…` (channelz form). */
export function isLoopbackPeer(peer: string): boolean {
  const host = peer
    .replace(/^(ipv4|ipv6):/, '')
    .replace(/:\d+$/, '')
    .replace(/^\[(.*)\]$/, '$1');
  return isLoopbackAddress(host);
}

/** 127.0.0.0/8, ::1 and IPv4-mapped loopback (Go's netip IsLoopback). */
export function isLoopbackAddress(host: string): boolean {
  const v4 = host.replace(/^::ffff:/i, '');
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(v4) || host === '::1';
}

/**
 * istiod's checkConnectionIdentity for streams on the secure port: some identity of the
 * authenticated caller must be in the proxy's namespace and, when the node names one, be its
 * service account — a workload cannot ask for another namespace's config. Streams that were not
 * authenticated (the plaintext port) are not checked here. Returns why a stream is refused.
 */
export function authorizeProxy(call: object, proxy: Proxy): string | undefined {
  const caller = callerOf(call);
  streamOrigins.set(proxy, { ...(caller ? { caller } : {}), loopback: isLoopbackPeer(peerOf(call)) });
  if (!caller) return undefined;
  const sa = typeof proxy.metadata.raw.SERVICE_ACCOUNT === 'string' ? proxy.metadata.raw.SERVICE_ACCOUNT : '';
  const ok = caller.identities.some((raw) => {
    const id = parseSpiffeId(raw);
    return id !== undefined && id.namespace === proxy.namespace && (sa === '' || id.serviceAccount === sa);
  });
  return ok ? undefined : `authorization failed: no identities (${caller.identities.join(', ')}) matched ${proxy.namespace}/${sa}`;
}
