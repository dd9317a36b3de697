/**
 * Whether and how the agent runs its DNS proxy, from pilot-agent's environment:
 * ISTIO_META_DNS_CAPTURE (sidecars) or ISTIO_META_ENABLE_DNS_SERVER (any proxy, no capture),
 * DNS_PROXY_ADDR (localhost:15053), DNS_FORWARD_PARALLEL, DNS_FORWARD_TIMEOUT (5s). Upstream
 * resolvers come from /etc/resolv.conf; with an address on port 53 and root, from
 * /var/lib/istio/resolv.conf when that exists (a VM or container without capture rules, where
 * /etc/resolv.conf points at the proxy itself).
 */
import { existsSync } from 'node:fs';
import { parseDurationMs } from '../../util/duration.js';
import { envBool, parseBool } from '../../util/env.js';
import type { AgentOptions } from '../options.js';
import { DEFAULT_DNS_PROXY_ADDR, DEFAULT_FORWARD_TIMEOUT_MS } from './dns-proxy.js';

export interface AgentDnsSettings {
  readonly address: string;
  readonly resolvConfFile: string;
  readonly forwardParallel: boolean;
  readonly forwardTimeoutMs: number;
  readonly proxyNamespace: string;
  /** `<namespace>.svc.<domain>`, the proxy's DNS domain. */
  readonly proxyDomain: string;
}

const metaBool = (v: unknown, what: string): boolean => (v === undefined || v === '' ? false : v === true || parseBool(String(v), what));

/** The DNS proxy's settings, or undefined when it is off. */
export function agentDnsSettings(
  opts: Pick<AgentOptions, 'proxyType' | 'namespace' | 'domain' | 'extraMetadata'>,
  env: Readonly<Record<string, string | undefined>>,
  isRoot: boolean = process.getuid?.() === 0,
): AgentDnsSettings | undefined {
  const capture = metaBool(opts.extraMetadata.DNS_CAPTURE, 'ISTIO_META_DNS_CAPTURE');
  const atGateway = metaBool(opts.extraMetadata.ENABLE_DNS_SERVER, 'ISTIO_META_ENABLE_DNS_SERVER');
  if (!((capture && opts.proxyType === 'sidecar') || atGateway)) return undefined;
  let address = env.DNS_PROXY_ADDR || DEFAULT_DNS_PROXY_ADDR;
  let resolvConfFile = '/etc/resolv.conf';
  if (address.endsWith(':53')) {
    // Port 53 without capture rules needs root; otherwise istio-agent falls back to the default.
    if (isRoot) {
      if (existsSync('/var/lib/istio/resolv.conf')) resolvConfFile = '/var/lib/istio/resolv.conf';
    } else address = DEFAULT_DNS_PROXY_ADDR;
  }
  return {
    address,
    resolvConfFile,
    forwardParallel: envBool(env, 'DNS_FORWARD_PARALLEL', false),
    forwardTimeoutMs: env.DNS_FORWARD_TIMEOUT
      ? parseDurationMs(env.DNS_FORWARD_TIMEOUT, 'DNS_FORWARD_TIMEOUT')
      : DEFAULT_FORWARD_TIMEOUT_MS,
    proxyNamespace: opts.namespace,
    proxyDomain: `${opts.namespace}.svc.${opts.domain}`,
  };
}
