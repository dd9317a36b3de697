/**
 * `meshctl x preview -f CHANGE.yaml [--proxy P]`: what a config change would do to every proxy
 * connected to a running meshpilot, before it is applied — per proxy, the xDS resources that would
 * be added, removed or changed (with the fields that change), and which proxies it leaves alone.
 * The server computes it on a throwaway push (`POST /debug/preview`); nothing is applied.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Command } from 'commander';
import type { PreviewResult } from '../xds/index.js';
import { errorMessage } from '../util/errors.js';
import { CliExit, EXIT, UsageError, type CliIO } from './io.js';

interface PreviewOpts {
  filename?: string;
  proxy?: string;
  debugAddress: string;
  output: string;
  verbose?: boolean;
}

/** As diff(1): nothing would change, something would, or the preview could not be made. */
export const PREVIEW_EXIT = { NONE: 0, CHANGES: 1, TROUBLE: 2 } as const;

const show = (v: unknown): string => (v === undefined ? '(none)' : JSON.stringify(v));

export function formatPreview(r: PreviewResult, verbose: boolean): string {
  const lines = [`Change: ${r.configs.join(', ')}`];
  for (const p of r.changed) {
    lines.push('', p.proxy);
    for (const c of p.changes) {
      lines.push(`  ${c.type} ${c.name} ${c.change}`);
      for (const f of c.fields ?? []) lines.push(`    ${f.path}: ${show(f.before)} → ${show(f.after)}`);
    }
  }
  if (r.changed.length === 0) lines.push('', 'No connected proxy would change.');
  if (r.unchanged.length > 0) {
    lines.push('', `Not affected: ${r.unchanged.length} prox${r.unchanged.length === 1 ? 'y' : 'ies'}${verbose ? '' : ' (-v lists them)'}`);
    if (verbose) lines.push(...r.unchanged.map((p) => `  ${p}`));
  }
  return `${lines.join('\n')}\n`;
}

export function registerPreview(program: Command, io: CliIO): void {
  const x =
    program.commands.find((c) => c.name() === 'x') ?? program.command('x').alias('experimental').description('Experimental commands');
  x.command('preview')
    .description('Show what a config change would do to each connected proxy before applying it (nothing is applied)')
    .option('-f, --filename <file>', 'the proposed change: Istio YAML or JSON (- for stdin)')
    .option('--proxy <id>', 'only this proxy (<pod>.<namespace> or its node id)')
    .option('--debug-address <host:port>', "meshpilot's debug HTTP address (--httpAddr)", '127.0.0.1:8080')
    .option('-o, --output <format>', 'text or json', 'text')
    .option('-v, --verbose', 'also list the proxies the change does not touch')
    .addHelpText(
      'after',
      '\nExit codes (as diff): 0 no proxy would change, 1 some would, 2 the preview could not be made\n(server unreachable or failing); 64 bad usage, 65 the change is not valid config.',
    )
    .action(async (_o: PreviewOpts, cmd: Command) => {
      const opts = cmd.optsWithGlobals<PreviewOpts>();
      if (opts.filename === undefined) throw new UsageError('no change given: use -f CHANGE.yaml (or -f - for stdin)');
      if (opts.output !== 'text' && opts.output !== 'json') throw new UsageError(`-o ${opts.output}: use text or json`);
      let body: string;
      try {
        body = opts.filename === '-' && io.readStdin ? await io.readStdin() : await readFile(path.resolve(io.cwd, opts.filename), 'utf8');
      } catch (err) {
        io.stderr.write(`Error: cannot read ${opts.filename}: ${errorMessage(err)}\n`);
        throw new CliExit(EXIT.DATA);
      }
      const query = new URLSearchParams({ file: opts.filename, ...(opts.proxy !== undefined ? { proxyID: opts.proxy } : {}) });
      let res: Response;
      try {
        res = await fetch(`http://${opts.debugAddress}/debug/preview?${query}`, {
          method: 'POST',
          body,
          headers: { 'content-type': 'application/yaml' },
          signal: AbortSignal.timeout(60_000),
        });
      } catch (err) {
        io.stderr.write(`Error: cannot reach meshpilot at ${opts.debugAddress} (--debug-address): ${errorMessage(err)}\n`);
        throw new CliExit(PREVIEW_EXIT.TROUBLE);
      }
      const text = await res.text();
      if (res.status === 400) {
        const errors = (JSON.parse(text) as { errors?: string[] }).errors ?? [text];
        for (const e of errors) io.stderr.write(`Error: ${e}\n`);
        throw new CliExit(EXIT.DATA);
      }
      if (res.status !== 200) {
        io.stderr.write(`Error: meshpilot answered ${res.status}: ${text.trim()}\n`);
        throw new CliExit(PREVIEW_EXIT.TROUBLE);
      }
      const result = JSON.parse(text) as PreviewResult;
      io.stdout.write(opts.output === 'json' ? `${JSON.stringify(result, null, 2)}\n` : formatPreview(result, opts.verbose === true));
      if (result.changed.length > 0) throw new CliExit(PREVIEW_EXIT.CHANGES);
    });
}
