/**
 * The resolve hook of module-log.mjs (it runs on the loader thread): one line per resolved module
 * URL, appended as it is resolved so that a process killed later still leaves its list.
 */
import { appendFileSync } from 'node:fs';

let file = '';

export function initialize(data) {
  file = data.file;
}

export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  appendFileSync(file, `${resolved.url}\n`);
  return resolved;
}
