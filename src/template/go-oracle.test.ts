/**
 * Table-driven conformance against Go: every case's expected output or error text was produced by
 * Go's text/template + Sprig (+ Helm's toYaml/fromYaml/toJson/fromJson/required/include/tpl) —
 * see testdata/go-oracle-cases.json "about". The engine must reproduce each byte, errors included.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { renderTemplate, TemplateError } from './index.js';

interface OracleCase {
  name: string;
  tmpl: string;
  data?: unknown;
  dataRef?: string;
  missingKey?: 'zero' | 'error';
  out?: string;
  err?: string;
}

const fixture = JSON.parse(readFileSync(new URL('./testdata/go-oracle-cases.json', import.meta.url), 'utf8')) as {
  cases: OracleCase[];
  datasets: Record<string, unknown>;
};

describe('text/template + Sprig conformance with Go', () => {
  assert.ok(fixture.cases.length > 150, 'fixture has its cases');
  for (const c of fixture.cases) {
    it(c.name, () => {
      // Each case gets its own copy: set/unset/merge mutate their maps as in Go.
      const data = structuredClone(c.dataRef !== undefined ? fixture.datasets[c.dataRef] : c.data);
      const run = (): string => renderTemplate(c.tmpl, data, { name: 't', missingKey: c.missingKey ?? 'default' });
      if (c.err !== undefined) {
        assert.throws(run, (e: unknown) => {
          assert.ok(e instanceof TemplateError, `TemplateError expected, got ${String(e)}`);
          assert.equal(e.message, c.err);
          return true;
        });
      } else {
        assert.equal(run(), c.out);
      }
    });
  }
});
