import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { isProxyRequest, mergePushRequests, pushRequest, reasonCount, TriggerReasons } from './push-request.js';

describe('pushRequest', () => {
  it('defaults to a non-full, unscoped request without reasons', () => {
    const r = pushRequest({ start: 5 });
    assert.equal(r.full, false);
    assert.equal(r.configsUpdated.size, 0);
    assert.equal(r.reason.size, 0);
    assert.equal(r.start, 5);
    assert.equal(r.forced, undefined);
  });

  it('copies its inputs and freezes the value', () => {
    const keys = new Set(['ServiceEntry/default/a']);
    const r = pushRequest({ full: true, configsUpdated: keys, reason: 'config', start: 1 });
    keys.add('ServiceEntry/default/b');
    assert.deepEqual([...r.configsUpdated], ['ServiceEntry/default/a']);
    assert.deepEqual([...r.reason], [['config', 1]]);
    assert.ok(Object.isFrozen(r));
  });

  it('uses istiod reason strings', () => {
    assert.equal(TriggerReasons.UnknownTrigger, 'unknown');
    assert.equal(TriggerReasons.EndpointUpdate, 'endpoint');
  });
});

describe('mergePushRequests', () => {
  const se = (n: string): string => `ServiceEntry/default/${n}`;

  it('is full when either side is full', () => {
    const a = pushRequest({ full: false, configsUpdated: [se('a')], start: 1 });
    const b = pushRequest({ full: true, configsUpdated: [se('b')], start: 2 });
    assert.equal(mergePushRequests(a, b).full, true);
    assert.equal(mergePushRequests(b, a).full, true);
    assert.equal(mergePushRequests(a, a).full, false);
  });

  it('unions scoped config keys', () => {
    const a = pushRequest({ full: true, configsUpdated: [se('a'), se('b')], start: 1 });
    const b = pushRequest({ full: true, configsUpdated: [se('b'), se('c')], start: 2 });
    assert.deepEqual([...mergePushRequests(a, b).configsUpdated].sort(), [se('a'), se('b'), se('c')]);
  });

  it('an empty set (everything) on either side wins', () => {
    const scoped = pushRequest({ full: true, configsUpdated: [se('a')], start: 1 });
    const everything = pushRequest({ full: true, start: 2 });
    assert.equal(mergePushRequests(scoped, everything).configsUpdated.size, 0);
    assert.equal(mergePushRequests(everything, scoped).configsUpdated.size, 0);
  });

  it('sums reasons and keeps the earliest start', () => {
    const a = pushRequest({
      reason: new Map([
        ['config', 2],
        ['endpoint', 1],
      ]),
      start: 30,
    });
    const b = pushRequest({
      reason: new Map([
        ['config', 1],
        ['secret', 4],
      ]),
      start: 10,
    });
    const m = mergePushRequests(a, b);
    assert.deepEqual(
      new Map(m.reason),
      new Map([
        ['config', 3],
        ['endpoint', 1],
        ['secret', 4],
      ]),
    );
    assert.equal(reasonCount(m), 8);
    assert.equal(m.start, 10);
  });

  it('is forced when either side is forced', () => {
    const a = pushRequest({ start: 1, forced: true });
    const b = pushRequest({ start: 1 });
    assert.equal(mergePushRequests(a, b).forced, true);
    assert.equal(mergePushRequests(b, b).forced, undefined);
  });

  it('does not modify its inputs', () => {
    const a = pushRequest({ full: false, configsUpdated: [se('a')], reason: 'endpoint', start: 1 });
    const b = pushRequest({ full: true, configsUpdated: [se('b')], reason: 'endpoint', start: 0 });
    const m = mergePushRequests(a, b);
    assert.notEqual(m, a);
    assert.deepEqual([...a.configsUpdated], [se('a')]);
    assert.deepEqual([...a.reason], [['endpoint', 1]]);
    assert.deepEqual([...b.reason], [['endpoint', 1]]);
    assert.equal(a.full, false);
    assert.equal(a.start, 1);
  });
});

describe('isProxyRequest', () => {
  it('is true only when the proxy request is the sole trigger', () => {
    assert.equal(isProxyRequest(pushRequest({ reason: 'proxyrequest', start: 0 })), true);
    const m = mergePushRequests(pushRequest({ reason: 'proxyrequest', start: 0 }), pushRequest({ reason: 'config', start: 0 }));
    assert.equal(isProxyRequest(m), false);
  });
});
