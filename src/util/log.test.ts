import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createLogger, isoMicros, textLine } from './log.js';

describe("log: text format (istiod's terminal format)", () => {
  it('time, level, scope, message and key=value fields, tab-separated', () => {
    const lines: string[] = [];
    const log = createLogger({ format: 'text', sink: (l) => lines.push(l) }).child('ads');
    log.info('new connection', { node: 'sidecar~10.0.0.1~a.ns~ns.svc.cluster.local', streams: 3, tls: false });
    assert.equal(lines.length, 1);
    const cols = lines[0]!.split('\t');
    assert.equal(cols.length, 5);
    assert.match(cols[0]!, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    assert.deepEqual(cols.slice(1), [
      'info',
      'ads',
      'new connection',
      'node=sidecar~10.0.0.1~a.ns~ns.svc.cluster.local streams=3 tls=false',
    ]);
  });

  it('the default scope has no scope column; no fields, no field column', () => {
    assert.equal(textLine('T', 'warn', undefined, 'hello'), 'T\twarn\thello');
    assert.equal(textLine('T', 'error', 'file', 'gone', { missing: undefined }), 'T\terror\tfile\tgone');
  });

  it('quotes values that are not one plain word; objects and lists as JSON; errors by message', () => {
    const line = textLine('T', 'info', 's', 'm', {
      a: 'two words',
      b: '',
      c: 'x=y',
      d: ['p', 'q'],
      e: { k: 1 },
      f: new Error('boom'),
      g: null,
      h: 10n,
    });
    assert.equal(line, 'T\tinfo\ts\tm\ta="two words" b="" c="x=y" d=["p","q"] e={"k":1} f=boom g=null h=10');
  });

  it('one record is one line, and secrets are redacted as in JSON lines', () => {
    const line = textLine('T', 'info', undefined, 'first\nsecond', { key: '-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----' });
    assert.equal(line.split('\n').length, 1);
    assert.match(line, /first\\nsecond/);
    assert.doesNotMatch(line, /MIIB/);
  });

  it('levels below the minimum are dropped in either format', () => {
    for (const format of ['text', 'json'] as const) {
      const lines: string[] = [];
      const log = createLogger({ format, level: 'warn', sink: (l) => lines.push(l) });
      log.info('no');
      log.warn('yes');
      assert.equal(lines.length, 1, format);
    }
  });

  it('JSON stays the same object per line', () => {
    const lines: string[] = [];
    createLogger({ format: 'json', scope: 'config', sink: (l) => lines.push(l) }).info('loaded', { objects: 12 });
    const rec = JSON.parse(lines[0]!) as Record<string, unknown>;
    assert.deepEqual({ ...rec, time: undefined }, { time: undefined, level: 'info', scope: 'config', msg: 'loaded', objects: 12 });
  });

  it('isoMicros: UTC with six fraction digits', () => {
    assert.equal(isoMicros(Date.UTC(2026, 11, 6, 4, 18, 50, 123) + 0.456), '2026-12-06T04:18:50.123456Z');
    assert.equal(isoMicros(Date.UTC(2026, 0, 1)), '2026-01-01T00:00:00.000000Z');
  });
});
