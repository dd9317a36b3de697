import assert from 'node:assert/strict';
import { test } from 'node:test';
import { anyLabelSelectorMatches, isEmptyLabelSelector, isEmptyLabels, labelSelectorMatches, labelsSubsetOf } from './labels.js';

test('matchLabels and every matchExpressions operator', () => {
  const labels = { env: 'prod', team: 'pay' };
  assert.equal(labelSelectorMatches({}, labels), true);
  assert.equal(labelSelectorMatches({ matchLabels: { env: 'prod' } }, labels), true);
  assert.equal(labelSelectorMatches({ matchLabels: { env: 'dev' } }, labels), false);
  assert.equal(labelSelectorMatches({ matchExpressions: [{ key: 'env', operator: 'In', values: ['dev', 'prod'] }] }, labels), true);
  assert.equal(labelSelectorMatches({ matchExpressions: [{ key: 'env', operator: 'NotIn', values: ['prod'] }] }, labels), false);
  assert.equal(labelSelectorMatches({ matchExpressions: [{ key: 'absent', operator: 'NotIn', values: ['x'] }] }, labels), true);
  assert.equal(labelSelectorMatches({ matchExpressions: [{ key: 'team', operator: 'Exists' }] }, labels), true);
  assert.equal(labelSelectorMatches({ matchExpressions: [{ key: 'team', operator: 'DoesNotExist' }] }, labels), false);
  assert.equal(
    labelSelectorMatches({ matchLabels: { env: 'prod' }, matchExpressions: [{ key: 'team', operator: 'In', values: ['ops'] }] }, labels),
    false,
  );
});

test('discoverySelectors: none select all, otherwise any', () => {
  assert.equal(anyLabelSelectorMatches([], {}), true);
  const sel = [{ matchLabels: { a: '1' } }, { matchLabels: { b: '1' } }];
  assert.equal(anyLabelSelectorMatches(sel, { b: '1' }), true);
  assert.equal(anyLabelSelectorMatches(sel, { c: '1' }), false);
});

test('labelsSubsetOf: every selector label present with the same value; an empty selector matches all', () => {
  assert.equal(labelsSubsetOf({}, {}), true);
  assert.equal(labelsSubsetOf({}, { a: '1' }), true);
  assert.equal(labelsSubsetOf({ a: '1' }, { a: '1', b: '2' }), true);
  assert.equal(labelsSubsetOf({ a: '1', b: '2' }, { a: '1' }), false);
  assert.equal(labelsSubsetOf({ a: '1' }, { a: '2' }), false);
  assert.equal(labelsSubsetOf({ a: '' }, {}), false);
  assert.equal(labelsSubsetOf({ toString: 'x' }, {}), false);
});

test('isEmptyLabels and isEmptyLabelSelector', () => {
  assert.equal(isEmptyLabels(undefined), true);
  assert.equal(isEmptyLabels({}), true);
  assert.equal(isEmptyLabels({ a: '' }), false);
  assert.equal(isEmptyLabelSelector({}), true);
  assert.equal(isEmptyLabelSelector({ matchLabels: {}, matchExpressions: [] }), true);
  assert.equal(isEmptyLabelSelector({ matchExpressions: [{ key: 'a', operator: 'Exists' }] }), false);
});
