/** `meshctl validate -f FILE...`: the server's validation offline (as `istioctl validate`). */
import type { Command } from 'commander';
import { formatConfigError } from '../config/index.js';
import { loadInputs } from './analyze/loader.js';
import { CliExit, EXIT, UsageError, type CliIO } from './io.js';

interface ValidateOpts {
  filename: string[];
  recursive?: boolean;
  namespace?: string;
  istioNamespace: string;
}

export function registerValidate(program: Command, io: CliIO): void {
  program
    .command('validate')
    .description('Validate Istio configuration files with the same checks the server applies')
    .option(
      '-f, --filename <file...>',
      'files or directories to validate (- for stdin); repeatable',
      (v: string, acc: string[]) => [...acc, v],
      [] as string[],
    )
    .option('-R, --recursive', 'process directory arguments recursively')
    .addHelpText('after', '\nExit codes: 0 valid, 1 invalid objects, 64 bad usage, 65 a file could not be parsed.')
    .action(async (_o: ValidateOpts, cmd: Command) => {
      const opts = cmd.optsWithGlobals<ValidateOpts>();
      if (opts.filename.length === 0) throw new UsageError('no files given: use -f FILE (or -f DIR, -f -)');
      const input = {
        args: opts.filename,
        recursive: opts.recursive === true,
        defaultNamespace: opts.namespace ?? 'default',
        cwd: io.cwd,
        rootNamespace: opts.istioNamespace,
      };
      const { snapshot, parseErrors } = await loadInputs(io.readStdin ? { ...input, readStdin: io.readStdin } : input);
      for (const e of parseErrors) io.stderr.write(`Error: failed to parse ${formatConfigError(e)}\n`);
      // istiod's warnings (a setting without effect, a deprecated field) do not reject an object:
      // shown as istioctl shows them, on valid and invalid objects alike, without changing the exit code.
      const warnings = snapshot.warnings.flatMap((o) => o.warnings);
      for (const w of warnings) io.stderr.write(`Warning: ${formatConfigError(w)}\n`);
      const errors = snapshot.invalid.flatMap((o) => o.errors);
      for (const e of errors) io.stderr.write(`Error: ${formatConfigError(e)}\n`);
      if (parseErrors.length > 0) throw new CliExit(EXIT.DATA);
      if (errors.length > 0) {
        io.stderr.write(
          `Error: ${errors.length} validation error${errors.length === 1 ? '' : 's'} in ${snapshot.invalid.length} object${snapshot.invalid.length === 1 ? '' : 's'}\n`,
        );
        throw new CliExit(EXIT.FAILURE);
      }
      const warned = warnings.length === 0 ? '' : `, ${warnings.length} warning${warnings.length === 1 ? '' : 's'}`;
      io.stdout.write(`validation succeed (${snapshot.configs.length} object${snapshot.configs.length === 1 ? '' : 's'}${warned})\n`);
    });
}
