import assert from 'node:assert/strict';
import { test } from 'node:test';
import { anySelectorMatches, selectorMatches } from './label-selector.js';

test('matchLabels and every matchExpressions operator', () => {
  const labels = { env: 'prod', team: 'pay' };
  assert.equal(selectorMatches({}, labels), true);
  assert.equal(selectorMatches({ matchLabels: { env: 'prod' } }, labels), true);
  assert.equal(selectorMatches({ matchLabels: { env: 'dev' } }, labels), false);
  assert.equal(selectorMatches({ matchExpressions: [{ key: 'env', operator: 'In', values: ['dev', 'prod'] }] }, labels), true);
  assert.equal(selectorMatches({ matchExpressions: [{ key: 'env', operator: 'NotIn', values: ['prod'] }] }, labels), false);
  assert.equal(selectorMatches({ matchExpressions: [{ key: 'absent', operator: 'NotIn', values: ['x'] }] }, labels), true);
  assert.equal(selectorMatches({ matchExpressions: [{ key: 'team', operator: 'Exists' }] }, labels), true);
  assert.equal(selectorMatches({ matchExpressions: [{ key: 'team', operator: 'DoesNotExist' }] }, labels), false);
  assert.equal(selectorMatches({ matchLabels: { env: 'prod' }, matchExpressions: [{ key: 'team', operator: 'In', values: ['ops'] }] }, labels), false);
});

test('discoverySelectors: none select all, otherwise any', () => {
  assert.equal(anySelectorMatches([], {}), true);
  const sel = [{ matchLabels: { a: '1' } }, { matchLabels: { b: '1' } }];
  assert.equal(anySelectorMatches(sel, { b: '1' }), true);
  assert.equal(anySelectorMatches(sel, { c: '1' }), false);
});
