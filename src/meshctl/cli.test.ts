import assert from 'node:assert/strict';
import { test } from 'node:test';
import { COMMANDS, createProgram } from './cli.js';
import type { CliIO } from './io.js';

const io: CliIO = { stdout: { write: () => true }, stderr: { write: () => true }, env: {}, cwd: process.cwd() };

test('COMMANDS names exactly the commands and aliases the program registers, so a one-command run finds its own', async () => {
  const program = await createProgram(io);
  const registered = program.commands.flatMap((c) => [c.name(), ...c.aliases()]).sort();
  assert.deepEqual(registered, COMMANDS.flatMap((c) => c.names).sort());
});

test('a program for one command registers that command only', async () => {
  const program = await createProgram(io, {}, 'analyze');
  assert.deepEqual(
    program.commands.map((c) => c.name()),
    ['analyze'],
  );
});
