/** What a meshctl command may touch: injected so tests run commands in-process. */
import { MeshError } from '../util/errors.js';
export interface CliIO {
  readonly stdout: { write(s: string): unknown; readonly isTTY?: boolean };
  readonly stderr: { write(s: string): unknown; readonly isTTY?: boolean };
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
  /** Reads all of stdin (for `-`); absent means stdin is not available. */
  readonly readStdin?: () => Promise<string>;
  /** Asks a yes/no question on the terminal; absent when stdin is not a terminal (commands that must ask then refuse). */
  readonly confirm?: (question: string) => Promise<boolean>;
}

/** istioctl's exit codes (cmd/istioctl/main.go and analyze): usage, unparsable input, issues found. */
export const EXIT = { OK: 0, FAILURE: 1, USAGE: 64, DATA: 65, ISSUES: 79 } as const;

/** Thrown by a command to end with an exit code (the message, if any, already printed). */
export class CliExit extends MeshError {
  constructor(readonly exitCode: number) {
    super('ABORTED', `exit ${exitCode}`);
    this.name = 'CliExit';
  }
}

/** A usage error: one line saying what is wrong and what to do, exit 64. */
export class UsageError extends MeshError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('INVALID_ARGUMENT', message, options);
    this.name = 'UsageError';
  }
}

/** Colour only on a TTY, and never when NO_COLOR is set. */
export function colourEnabled(io: CliIO): boolean {
  return io.stdout.isTTY === true && io.env.NO_COLOR === undefined;
}
