import assert from 'node:assert/strict';
import { test } from 'node:test';
import { analyzeLines, scenario } from './test-helper.js';
import { unreachableRoutesAnalyzer } from './unreachable-routes.js';

const f = (n: string): string => scenario('unreachable-routes', n);

test('IST0130 for a matched rule after a rule without matches, and for a second rule without matches (Istio 86c9f01 validation)', async () => {
  assert.deepEqual(await analyzeLines(unreachableRoutesAnalyzer, [f('after-catch-all.yaml')]), [
    'Warning [IST0130] (VirtualService default/two-catch-alls testdata/meshctl/analyze/unreachable-routes/after-catch-all.yaml:1) VirtualService rule "jason" not used (route without matches defined before).',
    'Warning [IST0130] (VirtualService default/two-catch-alls testdata/meshctl/analyze/unreachable-routes/after-catch-all.yaml:1) VirtualService rule "fallback" not used (only the last rule can have no matches).',
  ]);
});

test('tcp rules: the same port match twice', async () => {
  assert.deepEqual(await analyzeLines(unreachableRoutesAnalyzer, [f('tcp-duplicates.yaml')]), [
    'Warning [IST0130] (VirtualService default/mongo testdata/meshctl/analyze/unreachable-routes/tcp-duplicates.yaml:1) VirtualService rule #1 not used (all matches used by prior rules).',
    'Info [IST0131] (VirtualService default/mongo testdata/meshctl/analyze/unreachable-routes/tcp-duplicates.yaml:1) VirtualService rule #1 match #0 is not used (duplicate/overlapping match in rule #0).',
  ]);
});

test('IST0131 per duplicated match, IST0130 when every match of a rule is a duplicate', async () => {
  assert.deepEqual(await analyzeLines(unreachableRoutesAnalyzer, [f('duplicate-matches.yaml')]), [
    'Warning [IST0130] (VirtualService default/dup testdata/meshctl/analyze/unreachable-routes/duplicate-matches.yaml:1) VirtualService rule #2 not used (all matches used by prior rules).',
    'Info [IST0131] (VirtualService default/dup testdata/meshctl/analyze/unreachable-routes/duplicate-matches.yaml:1) VirtualService rule #1 match "again" is not used (duplicate/overlapping match in rule #0).',
    'Info [IST0131] (VirtualService default/dup testdata/meshctl/analyze/unreachable-routes/duplicate-matches.yaml:1) VirtualService rule #2 match #0 is not used (duplicate/overlapping match in rule #1).',
  ]);
});

test('a catch-all as the last rule is fine', async () => {
  assert.deepEqual(await analyzeLines(unreachableRoutesAnalyzer, [f('ok.yaml')]), []);
});

test('IST0131 when an earlier uri prefix covers a later match with the same conditions; another method or header: nothing', async () => {
  assert.deepEqual(await analyzeLines(unreachableRoutesAnalyzer, [f('overlapping-prefix.yaml')]), [
    'Info [IST0131] (VirtualService default/api testdata/meshctl/analyze/unreachable-routes/overlapping-prefix.yaml:1) VirtualService rule "users" match "get-users" of prefix /v1/users is not used (duplicate/overlapping match in rule #0 of prefix /v1 on "v1").',
  ]);
});
