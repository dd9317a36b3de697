/**
 * Structured logging on stderr (or a sink given at start-up), one record per line, in one of
 * istiod's two formats: `json` (one object per line, `--log_as_json`) or `text`, the terminal
 * format istiod prints by default: `<time>\t<level>\t<scope>\t<message>\t<key=value ...>`, the
 * scope column absent for the default scope, the time in UTC to the microsecond.
 */
import { redactSecrets } from './redact.js';

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFields = Record<string, unknown>;
export type LogFormat = 'json' | 'text';

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
  /** Line format; default json (the commands choose text for terminals, as istiod). */
  format?: LogFormat;
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  const min = ORDER[opts.level ?? 'info'];
  const sink = opts.sink ?? ((line: string) => process.stderr.write(line + '\n'));
  const text = opts.format === 'text';
  const make = (scope: string | undefined): Logger => {
    const emit = (level: LogLevel, msg: string, fields?: LogFields): void => {
      if (ORDER[level] < min) return;
      if (text) {
        sink(textLine(isoMicros(), level, scope, msg, fields));
        return;
      }
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

/** The current time as istiod prints it: RFC 3339 in UTC with microseconds. */
export function isoMicros(epochMs: number = performance.timeOrigin + performance.now()): string {
  const whole = Math.floor(epochMs);
  const micros = Math.min(999, Math.floor((epochMs - whole) * 1000));
  return new Date(whole).toISOString().replace(/Z$/, `${String(micros).padStart(3, '0')}Z`);
}

/** One record in istiod's text format (secrets redacted as in JSON lines; never more than one line). */
export function textLine(time: string, level: LogLevel, scope: string | undefined, msg: string, fields?: LogFields): string {
  const cols = [time, level];
  if (scope !== undefined) cols.push(scope);
  cols.push(oneLine(redactSecrets(msg)));
  const pairs: string[] = [];
  for (const [k, v] of Object.entries(fields ?? {})) {
    if (v === undefined) continue;
    pairs.push(`${k}=${textValue(v)}`);
  }
  if (pairs.length > 0) cols.push(pairs.join(' '));
  return cols.join('\t');
}

/** A field value for a text line: bare when it is one plain word, else quoted (JSON) as a whole. */
function textValue(v: unknown): string {
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint' || v === null) return String(v);
  if (v instanceof Error) return textValue(v.cause ? `${v.message} (cause: ${String(v.cause)})` : v.message);
  if (typeof v === 'string') {
    const s = redactSecrets(v);
    return PLAIN_WORD.test(s) ? s : JSON.stringify(s);
  }
  return JSON.stringify(v, jsonSafe) ?? String(v);
}

/** Printable, no space, quote, `=` or backslash: safe unquoted after `key=`. */
const PLAIN_WORD = /^[!#-&(-<>-[\]-~\u0080-\uffff]+$/;

const oneLine = (s: string): string => s.replace(/\r?\n/g, '\\n');

function jsonSafe(_key: string, value: unknown): unknown {
  if (typeof value === 'string') return redactSecrets(value);
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Error) return { message: value.message, ...(value.cause ? { cause: String(value.cause) } : {}) };
  if (value instanceof Set) return [...value];
  return value;
}
