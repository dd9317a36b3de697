#!/usr/bin/env node
import { startDiscovery } from '../bootstrap/discovery.js';
import { parseDiscoveryOptions } from '../bootstrap/options.js';
import { errorMessage } from '../util/errors.js';
import { createLogger } from '../util/log.js';

const USAGE = `usage: meshpilot discovery --configDir DIR [--grpcAddr 127.0.0.1:15010] [--httpAddr 127.0.0.1:8080]
                           [--monitoringAddr 127.0.0.1:15014] [--domain cluster.local] [--logLevel info]
env: PILOT_DEBOUNCE_AFTER (100ms), PILOT_DEBOUNCE_MAX (10s), PILOT_PUSH_THROTTLE (min(15+5*cores,100)),
     PILOT_ENABLE_EDS_DEBOUNCE (true), PILOT_XDS_CACHE_SIZE (60000)`;

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command !== 'discovery') {
    process.stderr.write(`${USAGE}\n`);
    return command === undefined || command === '--help' || command === '-h' ? 0 : 64;
  }
  let opts;
  try {
    opts = parseDiscoveryOptions(rest, process.env);
  } catch (err) {
    process.stderr.write(`meshpilot: ${errorMessage(err)}\n${USAGE}\n`);
    return 64;
  }
  const log = createLogger({ level: opts.logLevel });
  const running = await startDiscovery(opts, log);
  await new Promise<void>((resolve) => {
    const onSignal = (sig: NodeJS.Signals): void => {
      log.info('shutting down', { signal: sig });
      resolve();
    };
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
  });
  await running.stop();
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`meshpilot: ${errorMessage(err)}\n`);
    process.exit(1);
  },
);
