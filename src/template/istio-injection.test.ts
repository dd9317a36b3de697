/**
 * Istio's real sidecar injection template rendered by this engine must equal what Go's
 * text/template + Sprig render for the same data (testdata/istio-injection-golden.json "about").
 * The data mimics istiod's SidecarTemplateData with Go semantics (testdata/istio-fixture.ts); the
 * istiod functions are stand-ins defined the same way in the Go program that produced the golden
 * outputs — the real ones live in src/inject.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseTemplates } from './index.js';
import { dataOf, ISTIOD_STANDINS, loadIstioFixture } from './testdata/istio-fixture.js';

const fixture = loadIstioFixture();

describe("Istio's injection template", () => {
  const set = parseTemplates([{ name: 'sidecar', text: fixture.templateText }], { funcs: ISTIOD_STANDINS });
  for (const s of fixture.scenarios) {
    it(`renders ${s.name} exactly as Go does`, () => {
      const expected = fixture.golden[s.name];
      assert.ok(expected !== undefined && !expected.startsWith('ERROR'), 'golden output exists');
      assert.equal(set.execute('sidecar', dataOf(s)), expected);
    });
  }

  it('executes in well under 5 ms per pod once parsed', () => {
    const data = fixture.scenarios.map(dataOf);
    for (let i = 0; i < 20; i++) set.execute('sidecar', data[i % data.length]);
    const n = 200;
    const start = process.hrtime.bigint();
    for (let i = 0; i < n; i++) set.execute('sidecar', data[i % data.length]);
    const perRunMs = Number(process.hrtime.bigint() - start) / 1e6 / n;
    assert.ok(perRunMs < 5, `execution took ${perRunMs.toFixed(3)} ms per pod`);
  });
});
