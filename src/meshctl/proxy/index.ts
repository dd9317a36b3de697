/** `meshctl proxy-status` and `meshctl proxy-config …`: istioctl's verbs over meshpilot's xDS debug types. */
import { Option, type Command } from 'commander';
import { UsageError, type CliIO } from '../io.js';
import { withProgress } from '../progress.js';
import { addConnectionFlags, connectionOptions, type ConnectionFlags } from './connection-flags.js';
import {
  fetchProxyConfigFrom,
  renderProxyConfig,
  type ProxyConfigKind,
  type ProxyConfigOutput,
  type RenderOptions,
} from './proxy-config.js';
import { proxyStatus } from './proxy-status.js';

export { proxyStatus, type ProxyStatusOptions } from './proxy-status.js';
export {
  fetchProxyConfig,
  fetchProxyConfigFrom,
  renderProxyConfig,
  PROXY_CONFIG_KINDS,
  type ProxyConfigKind,
  type RenderOptions,
} from './proxy-config.js';

interface StatusFlags extends ConnectionFlags {
  verbose?: boolean;
  output: 'table' | 'json' | 'yaml';
}

interface ConfigFlags extends ConnectionFlags {
  output: ProxyConfigOutput;
  namespace?: string;
  fqdn?: string;
  port?: string;
  subset?: string;
  direction?: string;
  address?: string;
  type?: string;
  name?: string;
  cluster?: string;
  status?: string;
  verbose?: boolean;
  withHeaders?: boolean;
}

const defaultIO: CliIO = { stdout: process.stdout, stderr: process.stderr, env: process.env, cwd: process.cwd() };

function portFlag(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new UsageError(`invalid --port "${v}": give a port number`);
  return n === 0 ? undefined : n;
}

/** The filters of `proxy-config KIND` from its flags (only the ones that KIND takes are set). */
export function renderOptions(f: ConfigFlags): RenderOptions {
  const port = portFlag(f.port);
  const def = <K extends string, V>(k: K, v: V | undefined): { [P in K]?: V } => (v === undefined ? {} : { [k]: v }) as { [P in K]?: V };
  return {
    output: f.output,
    cluster: { ...def('fqdn', f.fqdn), ...def('port', port), ...def('subset', f.subset), ...def('direction', f.direction) },
    listener: { ...def('address', f.address), ...def('port', port), ...def('type', f.type), ...def('verbose', f.verbose) },
    route: { ...def('name', f.name), ...def('verbose', f.verbose) },
    endpoint: { ...def('address', f.address), ...def('port', port), ...def('cluster', f.cluster), ...def('status', f.status) },
    ...(f.withHeaders ? { withHeaders: true } : {}),
  };
}

const FLAGS_BY_KIND: Record<ProxyConfigKind, (c: Command) => Command> = {
  cluster: (c) =>
    c
      .option('--fqdn <fqdn>', 'filter clusters by substring of Service FQDN field')
      .option('--port <port>', 'filter clusters by Port field')
      .option('--subset <subset>', 'filter clusters by substring of Subset field')
      .option('--direction <dir>', 'filter clusters by Direction field'),
  listener: (c) =>
    c
      .option('--address <addr>', 'filter listeners by address field')
      .option('--port <port>', 'filter listeners by Port field')
      .option('--type <type>', 'filter listeners by type field (HTTP, TCP, HTTP+TCP)')
      .option('--no-verbose', 'print ADDRESSES PORT TYPE only'),
  route: (c) => c.option('--name <name>', 'filter routes by route name field').option('--no-verbose', 'print NAME VIRTUAL HOSTS only'),
  endpoint: (c) =>
    c
      .option('--address <addr>', 'filter endpoints by address field')
      .option('--port <port>', 'filter endpoints by Port field')
      .option('--cluster <name>', 'filter endpoints by cluster name field')
      .option('--status <status>', 'filter endpoints by status field'),
  secret: (c) => c,
  bootstrap: (c) => c,
  all: (c) =>
    FLAGS_BY_KIND.cluster(c)
      .option('--address <addr>', 'filter listeners by address field')
      .option('--type <type>', 'filter listeners by type field')
      .option('--name <name>', 'filter routes by route name field')
      .option('--no-verbose', 'shorter listener and route tables')
      .option('--with-headers', 'print a banner before each section'),
};

const DESCRIPTIONS: Record<ProxyConfigKind, string> = {
  cluster: 'Retrieves cluster configuration for the proxy',
  listener: 'Retrieves listener configuration for the proxy',
  route: 'Retrieves route configuration for the proxy',
  endpoint: 'Retrieves endpoint configuration for the proxy',
  secret: 'Retrieves secret configuration for the proxy',
  bootstrap: 'Retrieves bootstrap configuration for the proxy',
  all: 'Retrieves all configuration for the proxy',
};

/** Registers `proxy-status` and `proxy-config` on the meshctl program. */
export function registerProxyCommands(program: Command, io: CliIO = defaultIO): void {
  addConnectionFlags(
    program
      .command('proxy-status')
      .alias('ps')
      .description('Retrieves the synchronization status of each proxy connected to the control plane')
      .argument('[proxy]', 'only proxies whose id contains this (e.g. productpage-v1-1.bookinfo)')
      .option('-v, --verbose', 'a column per xDS type: SYNCED (age) / STALE / NOT SENT / ERROR / IGNORED')
      .addOption(new Option('-o, --output <format>', 'output format').choices(['table', 'json', 'yaml']).default('table')),
  ).action(async (proxy: string | undefined, _o: StatusFlags, cmd: Command) => {
    const f = cmd.optsWithGlobals<StatusFlags>();
    const { addresses, conn } = connectionOptions(f);
    const opts = { addresses, connection: conn, verbose: f.verbose === true, output: f.output, ...(proxy !== undefined ? { proxy } : {}) };
    io.stdout.write(await withProgress(io.stderr, `Asking ${addresses.join(', ')} for proxy status`, () => proxyStatus(opts)));
  });

  const pc = program
    .command('proxy-config')
    .alias('pc')
    .description('Retrieves the configuration the control plane serves a proxy (as istioctl proxy-config shows it)');
  for (const kind of Object.keys(FLAGS_BY_KIND) as ProxyConfigKind[]) {
    const cmd = pc.command(kind).description(DESCRIPTIONS[kind]).argument('<proxy>', 'the proxy: <pod>.<namespace>, or its node id');
    FLAGS_BY_KIND[kind](addConnectionFlags(cmd))
      .addOption(
        new Option('-o, --output <format>', 'output format')
          .choices(['short', 'json', 'yaml'])
          .default(kind === 'bootstrap' ? 'json' : 'short'),
      )
      .action(async (proxy: string, _o: ConfigFlags, c: Command) => {
        const f = c.optsWithGlobals<ConfigFlags>();
        const { addresses, conn } = connectionOptions(f);
        const id = f.namespace !== undefined && !proxy.includes('.') && !proxy.includes('~') ? `${proxy}.${f.namespace}` : proxy;
        const data = await withProgress(io.stderr, `Asking ${addresses.join(', ')} for the configuration of ${id}`, () =>
          fetchProxyConfigFrom(addresses, conn, id),
        );
        io.stdout.write(renderProxyConfig(kind, data, renderOptions(f)));
      });
  }
}
