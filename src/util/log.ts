/** Structured logging: one JSON object per line on stderr (or a sink given at start-up). */
import { redactSecrets } from './redact.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  child(scope: string): Logger;
}

const ORDER: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

export interface LoggerOptions {
  level?: LogLevel;
  scope?: string;
  /** Where lines go; default process.stderr. Tests pass an array-backed sink. */
  sink?: (line: string) => void;
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  const min = ORDER[opts.level ?? 'info'];
  const sink = opts.sink ?? ((line: string) => process.stderr.write(line + '\n'));
  const make = (scope: string | undefined): Logger => {
    const emit = (level: LogLevel, msg: string, fields?: LogFields): void => {
      if (ORDER[level] < min) return;
      const rec: LogFields = { time: new Date().toISOString(), level };
      if (scope !== undefined) rec.scope = scope;
      rec.msg = msg;
      sink(JSON.stringify(fields ? { ...rec, ...fields } : rec, jsonSafe));
    };
    return {
      debug: (m, f) => emit('debug', m, f),
      info: (m, f) => emit('info', m, f),
      warn: (m, f) => emit('warn', m, f),
      error: (m, f) => emit('error', m, f),
      child: (s) => make(scope ? `${scope}.${s}` : s),
    };
  };
  return make(opts.scope);
}

/** A logger that drops everything (tests that do not look at logs). */
export const silentLogger: Logger = createLogger({ sink: () => {}, level: 'error' });

function jsonSafe(_key: string, value: unknown): unknown {
  if (typeof value === 'string') return redactSecrets(value);
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Error) return { message: value.message, ...(value.cause ? { cause: String(value.cause) } : {}) };
  if (value instanceof Set) return [...value];
  return value;
}
