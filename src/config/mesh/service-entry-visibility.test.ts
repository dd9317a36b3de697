import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseMeshConfig } from './mesh-config-file.js';
import { serviceEntryVisibilityFor } from './service-entry-visibility.js';

const mesh = (yaml: string) => parseMeshConfig(yaml, 'test', 'cluster.local').mesh;

describe('MeshConfig.serviceEntryVisibility', () => {
  const v = mesh(`
serviceEntryVisibility:
  defaultVisibility: NAMESPACE
  applyToSidecars: true
  policies:
    - visibility: NONE
      matchingRules:
        - namespaceSelector: { matchLabels: { tier: sandbox } }
        - namespaceSelector: { matchExpressions: [{ key: team, operator: Exists }] }
    - visibility: PUBLIC
      matchingRules:
        - namespaceSelector: { matchLabels: { tier: sandbox } }
    - visibility: NONE
      matchingRules:
        - {}
`).serviceEntryVisibility;

  it('is read from the mesh config; applyToSidecars is reported as a field not used (sidecars keep exportTo)', () => {
    assert.equal(v?.defaultVisibility, 'namespace');
    assert.equal(v?.applyToSidecars, true);
    assert.equal(v?.policies.length, 3);
    assert.deepEqual(parseMeshConfig('serviceEntryVisibility: {}', 'test', 'cluster.local').ignoredFields, []);
    assert.deepEqual(parseMeshConfig('serviceEntryVisibility: {applyToSidecars: true}', 'test', 'cluster.local').ignoredFields, [
      'serviceEntryVisibility.applyToSidecars',
    ]);
  });

  it('the first policy whose rules all match decides; a rule with no matcher never matches; else the default', () => {
    assert.equal(serviceEntryVisibilityFor(v, { tier: 'sandbox', team: 'a' }), 'none', 'both rules of the first policy');
    assert.equal(serviceEntryVisibilityFor(v, { tier: 'sandbox' }), 'public', 'one rule of the first is not enough: the second');
    assert.equal(serviceEntryVisibilityFor(v, {}), 'namespace', 'the third policy has a rule without a matcher: the default');
  });

  it('unset, or a visibility left unspecified, is public', () => {
    assert.equal(serviceEntryVisibilityFor(undefined, { tier: 'sandbox' }), 'public');
    assert.equal(serviceEntryVisibilityFor(mesh('serviceEntryVisibility: {}').serviceEntryVisibility, {}), 'public');
    assert.equal(
      serviceEntryVisibilityFor(mesh('serviceEntryVisibility: {policies: [{matchingRules: []}]}').serviceEntryVisibility, {}),
      'public',
    );
  });

  it('a policy without rules matches every namespace', () => {
    const all = mesh('serviceEntryVisibility: {defaultVisibility: NONE, policies: [{visibility: NAMESPACE}]}').serviceEntryVisibility;
    assert.equal(serviceEntryVisibilityFor(all, { any: 'thing' }), 'namespace');
  });

  it('an operator Kubernetes does not know is an error naming the field', () => {
    assert.throws(
      () =>
        mesh(
          'serviceEntryVisibility: {policies: [{visibility: NONE, matchingRules: [{namespaceSelector: {matchExpressions: [{key: a, operator: Has}]}}]}]}',
        ),
      /test: serviceEntryVisibility\.policies\[0\]\.matchingRules\[0\]\.namespaceSelector\.matchExpressions\[0\]\.operator: "Has" is not In, NotIn, Exists or DoesNotExist/,
    );
  });
});
