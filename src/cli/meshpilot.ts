#!/usr/bin/env node
import type { AgentOptions } from '../agent/index.js';
import type { DiscoveryOptions } from '../bootstrap/options.js';
import { errorMessage } from '../util/errors.js';
import { createLogger } from '../util/log.js';
import { runMeshpilot } from './dispatch.js';

// The command line (help, version, parsing, usage errors) is src/cli/dispatch.ts; this file runs the
// long-lived commands against the real process until their signals.

/** `meshpilot agent`: the node agent (pilot-agent's role) until SIGTERM/SIGINT, /quitquitquit, or an Envoy that keeps dying. */
async function runAgent(opts: AgentOptions): Promise<number> {
  const { startAgent } = await import('../agent/index.js');
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

/** `meshpilot discovery`: the control plane until SIGTERM/SIGINT, then a drain within --shutdownDuration. */
async function runDiscovery(opts: DiscoveryOptions): Promise<number> {
  const { startDiscovery } = await import('../bootstrap/discovery.js');
  const log = createLogger({ level: opts.logLevel, format: opts.logFormat });
  // The console's config health runs meshctl's analyzers, loaded only when a console asks.
  const running = await startDiscovery(opts, log, {
    analyzeConfigDir: async (dir, rootNamespace) => (await import('../meshctl/analyze/live.js')).analyzeConfigDir(dir, rootNamespace),
  });
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

runMeshpilot(
  process.argv.slice(2),
  { stdout: (s) => void process.stdout.write(s), stderr: (s) => void process.stderr.write(s), env: process.env },
  {
    discovery: runDiscovery,
    agent: runAgent,
    iptables: async (args) => (await import('../cni/iptables-command.js')).runIptablesCommand(args, process.env),
    cni: async (args) => (await import('../cni/install/command.js')).runCniCommand(args, process.env),
  },
).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`meshpilot: ${errorMessage(err)}\n`);
    process.exit(1);
  },
);
