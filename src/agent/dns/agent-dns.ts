/** The agent's DNS proxy with the xDS side channel that feeds it its name table (agent.ts wires both). */
import type { Logger } from '../../util/log.js';
import type { AgentOptions } from '../options.js';
import { agentDnsSettings } from './dns-options.js';
import { startDnsProxy, type DnsProxy } from './dns-proxy.js';
import { nameTableChannel, type XdsSideChannel } from './name-table-channel.js';
import { readResolvConf } from './resolv-conf.js';

export interface AgentDns {
  readonly proxy: DnsProxy;
  /** Give to the xDS proxy: it asks for the name table on Envoy's stream and hands it here. */
  readonly channel: XdsSideChannel;
}

/** Starts the DNS proxy when DNS capture (or the gateway DNS server) is on; undefined otherwise. */
export async function startAgentDns(
  opts: AgentOptions,
  env: Readonly<Record<string, string | undefined>>,
  log: Logger,
): Promise<AgentDns | undefined> {
  const settings = agentDnsSettings(opts, env);
  if (!settings) return undefined;
  const proxy = await startDnsProxy({
    address: settings.address,
    resolvConf: await readResolvConf(settings.resolvConfFile),
    proxyNamespace: settings.proxyNamespace,
    proxyDomain: settings.proxyDomain,
    forwardTimeoutMs: settings.forwardTimeoutMs,
    forwardParallel: settings.forwardParallel,
    log,
  });
  let first = true;
  const channel = nameTableChannel((table) => {
    proxy.updateNameTable(table);
    if (first) log.info('DNS name table received', { names: Object.keys(table.table).length });
    first = false;
  }, log);
  return { proxy, channel };
}
