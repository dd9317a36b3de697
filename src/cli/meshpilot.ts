#!/usr/bin/env node
import { IPTABLES_USAGE } from '../cni/iptables/flags.js';
import { errorMessage } from '../util/errors.js';
import { createLogger } from '../util/log.js';

// Subcommands load their modules on demand: an init container's `meshpilot istio-iptables` must not
// pay for loading the control plane and the agent.

/** The usage text of every subcommand. */
async function usage(): Promise<string> {
  const [{ AGENT_USAGE }, { CNI_INSTALL_USAGE }] = await Promise.all([import('../agent/index.js'), import('../cni/install/command.js')]);
  return `usage: meshpilot discovery [--configDir DIR] [--kubeconfig FILE (in a Pod: in-cluster)] [--registries Kubernetes]
                           [--clusterID Kubernetes] [--meshConfig FILE (else ConfigMap istio in POD_NAMESPACE)]
                           [--grpcAddr 127.0.0.1:15010] [--httpAddr 127.0.0.1:8080]
                           [--monitoringAddr 127.0.0.1:15014] [--domain cluster.local] [--logLevel info]
                           [--maxRequestsPerSecond N] [--maxConcurrentStreams 100000] [--maxRecvMsgSize 4194304]
                           [--keepaliveInterval 30s] [--keepaliveTimeout 10s]
                           [--keepaliveMaxServerConnectionAge D (infinite; Helm sets 30m)]
                           [--keepaliveMaxServerConnectionAgeGrace 10s] [--shutdownDuration 10s]
                           [--secureGRPCAddr 127.0.0.1:15012 ('' = no CA, no TLS xDS)] [--caDir DIR (<configDir>/.meshpilot/ca)]
                           [--caCertsDir ./etc/cacerts (ROOT_CA_DIR)] [--caKeyType ECDSA|RSA]
                           [--workloadCertTtl 24h] [--maxWorkloadCertTtl 2160h]
                           [--httpsAddr 127.0.0.1:15017 (admission webhooks; '' = off; needs the CA)]
env: PILOT_DEBOUNCE_AFTER (100ms), PILOT_DEBOUNCE_MAX (10s), PILOT_PUSH_THROTTLE (min(15+5*cores,100)),
     PILOT_ENABLE_EDS_DEBOUNCE (true), PILOT_XDS_CACHE_SIZE (60000),
     PILOT_MAX_REQUESTS_PER_SECOND (new streams/s; 0 = min(15+5*cores,100)),
     ISTIO_GPRC_MAXSTREAMS (100000), ISTIO_GPRC_MAXRECVMSGSIZE (4194304),
     JWT_RULE ({"issuer","audiences":[],"jwks_uri"|"jwks"}), CA_TRUSTED_NODE_ACCOUNTS, POD_NAMESPACE, ISTIOD_CUSTOM_HOST,
     REVISION (default), INJECTION_WEBHOOK_CONFIG_NAME, VALIDATION_WEBHOOK_CONFIG_NAME
flags win over env; durations as istiod: 500ms, 10s, 30m, 1m30s

${AGENT_USAGE}
usage: meshpilot proxy [sidecar|router] [--domain NS.svc.cluster.local] [--log_output_level default:info]
       (pilot-agent's form, as Istio's templates run istio-proxy: meshpilot agent with those settings)

${IPTABLES_USAGE}

${CNI_INSTALL_USAGE}`;
}

/** `meshpilot agent`: the node agent (pilot-agent's role) until SIGTERM/SIGINT, /quitquitquit, or an Envoy that keeps dying. */
async function runAgent(args: string[]): Promise<number> {
  const { AGENT_USAGE, parseAgentOptions, startAgent } = await import('../agent/index.js');
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(`${AGENT_USAGE}\n`);
    return 0;
  }
  let opts;
  try {
    opts = parseAgentOptions(args, process.env);
  } catch (err) {
    process.stderr.write(`meshpilot agent: ${errorMessage(err)}\n${AGENT_USAGE}\n`);
    return 64;
  }
  const log = createLogger({ level: opts.logLevel, scope: 'agent' });
  const agent = await startAgent(opts, log);
  const signalled = new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  const why = await Promise.race([signalled.then((signal) => ({ reason: 'signal' as const, signal })), agent.exit]);
  if (why.reason === 'envoy-failed') {
    log.error('exiting: Envoy cannot be kept running', { error: why.error.message });
    await agent.stop();
    process.stderr.write(`meshpilot agent: ${why.error.message}\n`);
    return 1;
  }
  log.info('shutting down', why.reason === 'signal' ? { signal: why.signal } : { reason: 'quitquitquit' });
  // A second signal ends the process at once instead of waiting out the drain.
  const hard = (): void => {
    log.error('second signal during the drain: exiting now');
    process.exit(1);
  };
  process.once('SIGTERM', hard);
  process.once('SIGINT', hard);
  await agent.drain();
  await agent.stop();
  return 0;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === 'agent') return runAgent(rest);
  // `proxy sidecar|router …`: the injected istio-proxy container's args (pilot-agent's entry point).
  if (command === 'proxy') {
    let args;
    try {
      args = (await import('./pilot-agent-args.js')).agentArgsFromPilotAgentProxy(rest);
    } catch (err) {
      process.stderr.write(`meshpilot proxy: ${errorMessage(err)}\n`);
      return 64;
    }
    return runAgent(args);
  }
  // `istio-iptables …` is how Istio's injection template calls pilot-agent in istio-init / istio-validation.
  if (command === 'iptables' || command === 'istio-iptables') return (await import('../cni/iptables-command.js')).runIptablesCommand(rest, process.env);
  if (command === 'cni') return (await import('../cni/install/command.js')).runCniCommand(rest, process.env);
  if (command !== 'discovery') {
    process.stderr.write(`${await usage()}\n`);
    return command === undefined || command === '--help' || command === '-h' ? 0 : 64;
  }
  const [{ parseDiscoveryOptions }, { startDiscovery }] = await Promise.all([import('../bootstrap/options.js'), import('../bootstrap/discovery.js')]);
  let opts;
  try {
    opts = parseDiscoveryOptions(rest, process.env);
  } catch (err) {
    process.stderr.write(`meshpilot: ${errorMessage(err)}\n${await usage()}\n`);
    return 64;
  }
  const log = createLogger({ level: opts.logLevel });
  const running = await startDiscovery(opts, log);
  const signal = await new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
  });
  log.info('shutting down', { signal, shutdownDurationMs: opts.shutdownDurationMs });
  // A second signal, or a shutdown that overruns its budget, ends the process at once.
  const hard = (why: string): void => {
    log.error('shutdown did not finish: exiting now', { reason: why, shutdownDurationMs: opts.shutdownDurationMs });
    process.exit(1);
  };
  process.once('SIGTERM', () => hard('second SIGTERM'));
  process.once('SIGINT', () => hard('second SIGINT'));
  const deadline = setTimeout(() => hard('shutdown duration exceeded'), opts.shutdownDurationMs);
  deadline.unref();
  const summary = await running.stop();
  clearTimeout(deadline);
  log.info('shut down', { ...summary });
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`meshpilot: ${errorMessage(err)}\n`);
    process.exit(1);
  },
);
