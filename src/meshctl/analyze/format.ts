/** istioctl analyze's output formats: log lines, and JSON/YAML objects with the same fields. */
import { stringify } from 'yaml';
import { render, type Level } from './messages.js';
import type { Message } from './model.js';

/** The docs link istioctl puts in JSON/YAML (`?ref=istioctl-analyze`). */
export const docUrl = (code: string): string =>
  `https://istio.io/latest/docs/reference/config/analysis/${code.toLowerCase()}/?ref=istioctl-analyze`;

export const messageText = (m: Message): string => render(m.type.template, m.args);

/** `VirtualService default/reviews`: the resource's friendly name. */
export const originName = (m: Message): string =>
  m.resource.namespace === '' ? `${m.resource.kind} ${m.resource.name}` : `${m.resource.kind} ${m.resource.namespace}/${m.resource.name}`;

/** `file:line` where the resource (or the precise field) was read from. */
export function reference(m: Message): string | undefined {
  const o = m.resource.origin;
  if (!o) return undefined;
  const line = m.line ?? o.line;
  return line !== undefined ? `${o.file}:${line}` : o.file;
}

const COLOURS: Record<Level, string> = { Error: '\x1b[31m', Warning: '\x1b[33m', Info: '\x1b[36m' };

/** `Error [IST0101] (VirtualService default/reviews x.yaml:12) Referenced host not found: "reviews.bogus"` */
export function logLine(m: Message, colour: boolean): string {
  const ref = reference(m);
  const level = colour ? `${COLOURS[m.type.level]}${m.type.level}\x1b[0m` : m.type.level;
  return `${level} [${m.type.code}] (${originName(m)}${ref ? ` ${ref}` : ''}) ${messageText(m)}`;
}

/** Keys in Go's map order (sorted), as istioctl's json.MarshalIndent prints them. */
export function toObject(m: Message): Record<string, string> {
  const o: Record<string, string> = {
    code: m.type.code,
    documentationUrl: docUrl(m.type.code),
    level: m.type.level,
    message: messageText(m),
    origin: originName(m),
  };
  const ref = reference(m);
  if (ref) o.reference = ref;
  return o;
}

export type OutputFormat = 'log' | 'json' | 'yaml';

export function formatMessages(msgs: readonly Message[], format: OutputFormat, colour: boolean): string {
  if (format === 'json') return `${JSON.stringify(msgs.map(toObject), null, '\t')}\n`;
  if (format === 'yaml') return msgs.length === 0 ? '[]\n' : stringify(msgs.map(toObject));
  return msgs.map((m) => `${logLine(m, colour)}\n`).join('');
}
