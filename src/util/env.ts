/** Settings from the environment, spelled as istiod accepts them. */
import { MeshError } from './errors.js';

/** A boolean setting: 1/true/yes or 0/false/no (any case); anything else names the setting. */
export function parseBool(text: string, what: string): boolean {
  if (/^(1|true|yes)$/i.test(text)) return true;
  if (/^(0|false|no)$/i.test(text)) return false;
  throw new MeshError('INVALID_ARGUMENT', `${what}: "${text}" is not a boolean`);
}

/** An optional boolean environment variable: unset or empty gives `def`. */
export function envBool(env: Readonly<Record<string, string | undefined>>, name: string, def: boolean): boolean {
  const v = env[name];
  return v === undefined || v === '' ? def : parseBool(v, name);
}

/** Go's strconv.ParseBool (istiod parses annotations such as `istio.io/dry-run` with it); undefined when malformed. */
export function parseGoBool(s: string): boolean | undefined {
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(s)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(s)) return false;
  return undefined;
}
