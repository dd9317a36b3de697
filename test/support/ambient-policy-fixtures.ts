/** Test fixtures of the ambient policy conversions: YAML through the real parser and validator. */
import assert from 'node:assert/strict';
import type { Config } from '../../src/config/config.js';
import type { KindName } from '../../src/config/kinds.js';
import { parseConfigFile } from '../../src/config/parse.js';
import { validateObject } from '../../src/config/validation/validate-object.js';

export const ROOT = 'istio-system';

/** Every object of a multi-document YAML, parsed and validated as the file source does. */
export function configsOf(yaml: string): Config[] {
  const parsed = parseConfigFile(yaml, 'policies.yaml');
  assert.ok(parsed.ok, JSON.stringify(!parsed.ok && parsed.errors));
  return parsed.value.documents.map((d) => {
    const r = validateObject(d.object, d.origin);
    assert.ok(r.ok, `fixture invalid: ${JSON.stringify(!r.ok && r.errors)}`);
    return r.value;
  });
}

/** The one object of `kind` in `yaml`. */
export function configOf<K extends KindName>(kind: K, yaml: string): Config<K> {
  const [c, ...rest] = configsOf(yaml);
  assert.ok(c && rest.length === 0, 'expected one document');
  assert.equal(c.meta.kind, kind);
  return c as Config<K>;
}

/** A PeerAuthentication document. */
export const pa = (namespace: string, name: string, spec: string): string =>
  `---\napiVersion: security.istio.io/v1\nkind: PeerAuthentication\nmetadata: {name: ${name}, namespace: ${namespace}}\nspec:\n${indent(spec)}\n`;

/** An AuthorizationPolicy document (`meta`: extra metadata fields as a YAML flow map body). */
export const ap = (namespace: string, name: string, spec: string, meta = ''): string =>
  `---\napiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\nmetadata: {name: ${name}, namespace: ${namespace}${meta ? `, ${meta}` : ''}}\nspec:\n${indent(spec)}\n`;

const indent = (s: string): string =>
  s
    .split('\n')
    .map((l) => `  ${l}`)
    .join('\n');
