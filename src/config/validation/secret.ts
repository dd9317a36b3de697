/** Kubernetes Secret checks: only what every consumer needs (string values, base64 `data`). */
import type { Struct } from '@bufbuild/protobuf/wkt';
import type { ObjectContext } from './context.js';
import { key, type Issues } from './issues.js';

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

export function validateSecret(secret: Struct, _ctx: ObjectContext, issues: Issues): void {
  const type = secret.fields.type?.kind;
  if (type && type.case !== 'stringValue') issues.add('type', 'type must be a string');
  for (const section of ['data', 'stringData'] as const) {
    const v = secret.fields[section]?.kind;
    if (!v || v.case === 'nullValue') continue;
    if (v.case !== 'structValue') {
      issues.add(section, `${section} must be a map of strings`);
      continue;
    }
    for (const [k, val] of Object.entries(v.value.fields)) {
      const p = key(section, k);
      if (val.kind.case !== 'stringValue') issues.add(p, 'value must be a string');
      else if (
        section === 'data' &&
        (val.kind.value.replace(/\s/g, '').length % 4 !== 0 || !BASE64.test(val.kind.value.replace(/\s/g, '')))
      ) {
        issues.add(p, 'value is not valid base64');
      }
    }
  }
}
