/**
 * Template engine micro benchmark: parse and execute Istio's sidecar injection template (what
 * istiod does per Pod admission) and toYaml of a chart-sized value.
 *
 *   npx tsx bench/template-bench.ts [--iterations 500]
 */
import { parseArgs } from 'node:util';
import { marshalYaml, parseTemplates } from '../src/template/index.js';
import { dataOf, ISTIOD_STANDINS, loadIstioFixture } from '../src/template/testdata/istio-fixture.js';

const { values } = parseArgs({ options: { iterations: { type: 'string', default: '500' } } });
const iterations = Number(values.iterations);

function time(label: string, n: number, fn: (i: number) => unknown): void {
  for (let i = 0; i < Math.min(50, n); i++) fn(i);
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) fn(i);
  const ms = Number(process.hrtime.bigint() - start) / 1e6;
  console.log(`${label.padEnd(44)} ${(ms / n).toFixed(3).padStart(8)} ms/op  (${n} ops)`);
}

const fixture = loadIstioFixture();
const data = fixture.scenarios.map(dataOf);
time('parse injection template', Math.max(10, iterations / 10), () =>
  parseTemplates([{ name: 'sidecar', text: fixture.templateText }], { funcs: ISTIOD_STANDINS }),
);
const set = parseTemplates([{ name: 'sidecar', text: fixture.templateText }], { funcs: ISTIOD_STANDINS });
time('execute injection template (per pod)', iterations, (i) => set.execute('sidecar', data[i % data.length]));
const big = {
  items: Array.from({ length: 200 }, (_, i) => ({
    name: `item-${i}`,
    labels: { app: 'a', version: `v${i}` },
    ports: [80, 443],
    note: 'a long string '.repeat(8),
  })),
};
time('toYaml of 200 objects', Math.max(10, iterations / 5), () => marshalYaml(big));
