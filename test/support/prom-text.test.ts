import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { histogramBuckets, parsePromText } from './prom-text.js';

describe('parsePromText', () => {
  it('parses counters, gauges and labelled histograms (labels, _sum, _count kept)', () => {
    const m = parsePromText(
      [
        '# HELP c A counter.',
        '# TYPE c counter',
        'c{type="lds",x="a\\"b"} 3',
        '# TYPE g gauge',
        'g 1.5e2',
        '# TYPE h histogram',
        'h_bucket{le="0.1",type="lds"} 1',
        'h_bucket{le="+Inf",type="lds"} 2',
        'h_sum{type="lds"} 0.3',
        'h_count{type="lds"} 2',
        '',
      ].join('\n'),
    );
    assert.equal(m.get('c')?.help, 'A counter.');
    assert.deepEqual(m.get('c')?.samples, [{ name: 'c', labels: { type: 'lds', x: 'a"b' }, value: 3 }]);
    assert.equal(m.get('g')?.samples[0]?.value, 150);
    const h = m.get('h');
    assert.ok(h);
    assert.deepEqual(histogramBuckets(h), [0.1]);
    assert.deepEqual(h.samples.find((s) => s.name === 'h_count')?.labels, { type: 'lds' });
  });

  it('rejects malformed input', () => {
    assert.throws(() => parsePromText('x 1\n'), /before any TYPE/);
    assert.throws(() => parsePromText('# TYPE x counter\nx{a=1} 1\n'), /quoted/);
    assert.throws(() => parsePromText('# TYPE x counter\nx one\n'), /bad value/);
    assert.throws(() => parsePromText('# TYPE h histogram\nh_bucket{le="+Inf"} 2\nh_count 3\n'), /_count/);
    assert.throws(() => parsePromText('# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_count 1\n'), /cumulative/);
  });
});
