/**
 * The ztunnel policies of a PushContext: the Authorization list istiod serves and a workload's
 * `authorization_policies`, following the sequence of istiod's TestAmbientIndex_Policy
 * (pilot/pkg/serviceregistry/ambient/ambientindex_test.go) with our own objects; and that an
 * unchanged policy is not converted again when the PushContext is rebuilt.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigStore } from '../../config/store.js';
import { ap, configsOf, pa, ROOT } from '../../../test/support/ambient-policy-fixtures.js';
import { defaultMeshConfig } from '../../config/mesh/mesh-config.js';
import { namespaceDep } from '../dependency-tokens.js';
import { PushContext } from '../push-context.js';
import { workloadPolicyNames, ztunnelAuthorizations, ztunnelPolicyStatus } from './policies.js';

const MESH = defaultMeshConfig();
const STATIC = `${ROOT}/istio_converted_static_strict`;
const APP_A = { app: 'a' };

/** A store over which PushContexts are built one after the other, each from the previous (as the server does). */
class Mesh {
  private readonly store = new ConfigStore();
  push: PushContext;
  private version = 0;
  /** `ztunnelDryRunPolicies`: AMBIENT_ENABLE_DRY_RUN_AUTHORIZATION_POLICY, as meshpilot discovery hands it to each PushContext. */
  constructor(
    yaml = '',
    private readonly ztunnelDryRunPolicies = false,
  ) {
    this.push = this.build(yaml);
  }
  private build(yaml: string): PushContext {
    if (yaml) this.store.apply(configsOf(yaml).map((config) => ({ type: 'upsert' as const, config })));
    const previous = this.version > 0 ? this.push : undefined;
    return new PushContext({
      version: `v${++this.version}`,
      mesh: MESH,
      config: this.store.snapshot(),
      ztunnelDryRunPolicies: this.ztunnelDryRunPolicies,
      ...(previous && { previous, cache: previous.cache }),
    });
  }
  apply(yaml: string): this {
    this.push = this.build(yaml);
    return this;
  }
  delete(kind: 'AuthorizationPolicy' | 'PeerAuthentication', namespace: string, name: string): this {
    this.store.apply([{ type: 'delete', key: { kind, namespace, name } }]);
    this.push = this.build('');
    return this;
  }
  names(namespace: string, labels: Record<string, string>): string[] {
    return workloadPolicyNames(this.push, namespace, labels);
  }
  authorizationNames(): string[] {
    return ztunnelAuthorizations(this.push).map((a) => `${a.namespace}/${a.name}`);
  }
}

describe('workloadPolicyNames', () => {
  it('PeerAuthentications: the static STRICT policy while the effective mode is STRICT, else the converted workload policy', () => {
    const m = new Mesh(pa(ROOT, 'global', 'mtls: {mode: PERMISSIVE}') + pa('ns1', 'namespace', 'mtls: {mode: STRICT}'));
    assert.deepEqual(m.names('ns1', APP_A), [STATIC]);
    assert.deepEqual(m.names('ns2', APP_A), [], 'another namespace follows the PERMISSIVE mesh');
    m.apply(pa('ns1', 'selector', 'selector: {matchLabels: {app: a}}\nmtls: {mode: STRICT}'));
    assert.deepEqual(m.names('ns1', APP_A), [STATIC]);
    m.apply(pa('ns1', 'selector', 'selector: {matchLabels: {app: a}}\nmtls: {mode: PERMISSIVE}'));
    assert.deepEqual(m.names('ns1', APP_A), []);
    assert.deepEqual(m.names('ns1', { app: 'not-a' }), [STATIC], 'a workload the selector misses keeps the namespace STRICT');
    m.apply(pa('ns1', 'selector', 'selector: {matchLabels: {app: a}}\nmtls: {mode: PERMISSIVE}\nportLevelMtls: {9090: {mode: STRICT}}'));
    assert.deepEqual(m.names('ns1', APP_A), ['ns1/converted_peer_authentication_selector']);
    // PeerAuthentication has no mesh-wide selector policies: one in the root namespace changes nothing.
    m.apply(pa(ROOT, 'global-selector', 'selector: {matchLabels: {app: a}}\nmtls: {mode: STRICT}'));
    assert.deepEqual(m.names('ns1', APP_A), ['ns1/converted_peer_authentication_selector']);
    m.delete('PeerAuthentication', ROOT, 'global-selector');
    m.apply(pa('ns1', 'selector', 'selector: {matchLabels: {app: a}}\nportLevelMtls: {9090: {mode: PERMISSIVE}}'));
    assert.deepEqual(m.names('ns1', APP_A), ['ns1/converted_peer_authentication_selector'], 'the exception carries the STRICT default');
    m.delete('PeerAuthentication', 'ns1', 'selector');
    assert.deepEqual(m.names('ns1', APP_A), [STATIC]);
  });

  it('AuthorizationPolicies: only converted ones with a label selector, of the namespace and the root, sorted; then the PeerAuthentication ones', () => {
    const m = new Mesh(
      ap(ROOT, 'global', 'rules:\n- {}') +
        ap('ns1', 'namespace', 'rules:\n- {}') +
        ap('ns1', 'selector', 'selector: {matchLabels: {app: a}}\nrules:\n- {}') +
        ap('ns2', 'elsewhere', 'selector: {matchLabels: {app: a}}\nrules:\n- {}') +
        ap('ns1', 'audit', 'selector: {matchLabels: {app: a}}\naction: AUDIT\nrules:\n- {}') +
        ap('ns1', 'waypoint', 'targetRefs:\n- {kind: Gateway, group: gateway.networking.k8s.io, name: wp}\nrules:\n- {}') +
        ap('ns1', 'empty-selector', 'selector: {}\nrules:\n- {}'),
    );
    assert.deepEqual(m.names('ns1', APP_A), ['ns1/selector']);
    assert.deepEqual(m.names('ns1', { app: 'not-a' }), []);
    m.apply(ap(ROOT, 'global-selector', 'selector: {matchLabels: {app: a}}\nrules:\n- {}'));
    assert.deepEqual(m.names('ns1', APP_A), [`${ROOT}/global-selector`, 'ns1/selector']);
    assert.deepEqual(m.names('ns2', { app: 'a', tier: 'web' }), [`${ROOT}/global-selector`, 'ns2/elsewhere']);
    m.apply(ap(ROOT, 'global-selector', 'selector: {matchLabels: {app: not-a}}\nrules:\n- {}'));
    assert.deepEqual(m.names('ns1', APP_A), ['ns1/selector']);
    m.apply(pa(ROOT, 'strict', 'mtls: {mode: STRICT}'));
    assert.deepEqual(m.names('ns1', APP_A), ['ns1/selector', STATIC], 'not one sorted list: policies first, then PeerAuthentications');
    m.apply(
      pa('ns1', 'selector-strict', 'selector: {matchLabels: {app: a}}\nmtls: {mode: STRICT}\nportLevelMtls: {9090: {mode: PERMISSIVE}}'),
    );
    assert.deepEqual(m.names('ns1', APP_A), ['ns1/selector', 'ns1/converted_peer_authentication_selector-strict']);
    // As istiod: a workload without labels is not filtered by label at all.
    assert.deepEqual(m.names('ns1', {}), [`${ROOT}/global-selector`, 'ns1/selector', STATIC]);
    // In the root namespace the two namespaces are one.
    assert.deepEqual(m.names(ROOT, { app: 'not-a' }), [`${ROOT}/global-selector`, STATIC]);
  });

  it('records the namespace and the root namespace: a change elsewhere keeps a cached result', () => {
    const m = new Mesh(ap('ns1', 'selector', 'selector: {matchLabels: {app: a}}\nrules:\n- {}'));
    const cache = m.push.cache;
    cache.getOrBuild('names-ns1', () => workloadPolicyNames(m.push, 'ns1', APP_A));
    cache.invalidate({
      tokens: new Set([namespaceDep('AuthorizationPolicy', 'ns2'), namespaceDep('PeerAuthentication', 'ns2')]),
      kinds: new Set(),
    });
    assert.ok(cache.has('names-ns1'));
    cache.invalidate({ tokens: new Set([namespaceDep('PeerAuthentication', 'ns1')]), kinds: new Set() });
    assert.ok(!cache.has('names-ns1'));
    cache.getOrBuild('names-ns1', () => workloadPolicyNames(m.push, 'ns1', APP_A));
    cache.invalidate({ tokens: new Set(), kinds: new Set(['AuthorizationPolicy']) });
    assert.ok(!cache.has('names-ns1'), 'a root-namespace change invalidates the kind');
  });
});

describe('ztunnelAuthorizations', () => {
  it('every converted policy by resource name, the static STRICT policy once any PeerAuthentication exists', () => {
    const m = new Mesh(
      ap('ns1', 'b-allow', 'rules:\n- {}') +
        ap('ns1', 'a-deny', 'action: DENY\nrules:\n- {}') +
        ap('ns1', 'custom', 'action: CUSTOM\nprovider: {name: ext}\nrules:\n- {}') +
        ap('ns1', 'waypoint', 'targetRef: {kind: Gateway, group: gateway.networking.k8s.io, name: wp}\nrules:\n- {}') +
        ap(ROOT, 'mesh', 'rules:\n- {}'),
    );
    assert.deepEqual(m.authorizationNames(), [`${ROOT}/mesh`, 'ns1/a-deny', 'ns1/b-allow']);
    assert.equal(ztunnelPolicyStatus(m.push, 'ns1', 'custom')?.message, 'ztunnel does not support the CUSTOM action');
    assert.equal(ztunnelPolicyStatus(m.push, 'ns1', 'b-allow'), undefined);
    m.apply(pa('ns2', 'permissive', 'mtls: {mode: PERMISSIVE}'));
    assert.deepEqual(m.authorizationNames(), [STATIC, `${ROOT}/mesh`, 'ns1/a-deny', 'ns1/b-allow']);
    m.apply(pa('ns2', 'ports', 'selector: {matchLabels: {app: a}}\nmtls: {mode: PERMISSIVE}\nportLevelMtls: {8080: {mode: STRICT}}'));
    assert.deepEqual(m.authorizationNames(), [
      STATIC,
      `${ROOT}/mesh`,
      'ns1/a-deny',
      'ns1/b-allow',
      'ns2/converted_peer_authentication_ports',
    ]);
    m.delete('PeerAuthentication', 'ns2', 'permissive').delete('PeerAuthentication', 'ns2', 'ports');
    assert.deepEqual(m.authorizationNames(), [`${ROOT}/mesh`, 'ns1/a-deny', 'ns1/b-allow']);
  });

  it('a converted PeerAuthentication follows the namespace and mesh policies it inherits from', () => {
    const m = new Mesh(pa('ns1', 'ports', 'selector: {matchLabels: {app: a}}\nportLevelMtls: {9090: {mode: PERMISSIVE}}'));
    assert.deepEqual(m.authorizationNames(), [STATIC], 'PERMISSIVE around it: no exception to make');
    m.apply(pa(ROOT, 'mesh', 'mtls: {mode: STRICT}'));
    const converted = ztunnelAuthorizations(m.push).find((a) => a.name === 'converted_peer_authentication_ports');
    assert.equal(converted?.groups[0]?.rules.length, 2, 'the exception and the folded-in STRICT');
    m.apply(pa('ns1', 'namespace', 'mtls: {mode: PERMISSIVE}'));
    assert.deepEqual(m.authorizationNames(), [STATIC], 'a PERMISSIVE namespace policy overrides the mesh');
  });

  it('a rebuilt PushContext reconverts only the changed policy', () => {
    const m = new Mesh(
      ap('ns1', 'one', 'rules:\n- {}') +
        ap('ns1', 'two', 'action: DENY\nrules:\n- {}') +
        pa('ns1', 'mtls', 'mtls: {mode: STRICT}') +
        pa('ns1', 'ports', 'selector: {matchLabels: {app: a}}\nportLevelMtls: {9090: {mode: PERMISSIVE}}'),
    );
    const before = ztunnelAuthorizations(m.push);
    m.apply(
      '---\napiVersion: networking.istio.io/v1\nkind: VirtualService\nmetadata: {name: vs, namespace: ns1}\nspec: {hosts: [a], http: [{route: [{destination: {host: a}}]}]}\n',
    );
    assert.equal(ztunnelAuthorizations(m.push), before, 'policies unchanged: the same list');
    m.apply(ap('ns1', 'two', 'action: DENY\nrules:\n- from:\n  - source: {namespaces: [x]}'));
    const after = ztunnelAuthorizations(m.push);
    const byName = (list: typeof before, name: string) => list.find((a) => a.name === name);
    assert.equal(byName(after, 'one'), byName(before, 'one'), 'unchanged policy: the same object');
    assert.equal(byName(after, 'istio_converted_static_strict'), byName(before, 'istio_converted_static_strict'));
    assert.ok(byName(before, 'converted_peer_authentication_ports'));
    assert.equal(byName(after, 'converted_peer_authentication_ports'), byName(before, 'converted_peer_authentication_ports'));
    assert.notEqual(byName(after, 'two'), byName(before, 'two'));
    assert.equal(byName(after, 'two')?.groups[0]?.rules[0]?.matches[0]?.namespaces[0]?.matchType.value, 'x');
  });

  it('dry-run policies only when enabled', () => {
    const m = new Mesh(ap('ns1', 'dry', 'selector: {matchLabels: {app: a}}\nrules:\n- {}', 'annotations: {istio.io/dry-run: "true"}'));
    assert.deepEqual(m.authorizationNames(), []);
    assert.deepEqual(m.names('ns1', APP_A), []);
    const enabled = ztunnelAuthorizations(m.push, { dryRunPolicies: true });
    assert.deepEqual(
      enabled.map((a) => [a.name, a.dryRun]),
      [['dry', true]],
    );
    assert.deepEqual(workloadPolicyNames(m.push, 'ns1', APP_A, { dryRunPolicies: true }), ['ns1/dry']);
  });

  it("dry-run policies follow the PushContext's setting (AMBIENT_ENABLE_DRY_RUN_AUTHORIZATION_POLICY)", () => {
    const yaml = ap('ns1', 'dry', 'selector: {matchLabels: {app: a}}\nrules:\n- {}', 'annotations: {istio.io/dry-run: "true"}');
    const on = new Mesh(yaml, true);
    assert.deepEqual(
      ztunnelAuthorizations(on.push).map((a) => [a.name, a.dryRun]),
      [['dry', true]],
    );
    assert.deepEqual(on.names('ns1', APP_A), ['ns1/dry'], 'the workload lists it');
    const off = new Mesh(yaml, false);
    assert.deepEqual(off.authorizationNames(), []);
    assert.deepEqual(off.names('ns1', APP_A), []);
  });
});
