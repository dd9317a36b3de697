import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Config } from '../../config/config.js';
import { parseConfigFile } from '../../config/parse.js';
import { ConfigStore } from '../../config/store.js';
import { validateObject } from '../../config/validation/validate-object.js';
import { mtlsModeForPort, SecurityPolicyIndex } from './security-index.js';

const ROOT = 'istio-system';

/** Parses and validates YAML as the file source does, then builds the index over a store snapshot. */
function index(yaml: string): SecurityPolicyIndex {
  const parsed = parseConfigFile(yaml, 'security.yaml');
  assert.ok(parsed.ok, JSON.stringify(!parsed.ok && parsed.errors));
  const store = new ConfigStore();
  store.apply(
    parsed.value.documents.map((d) => {
      const r = validateObject(d.object, d.origin);
      assert.ok(r.ok, `fixture invalid: ${JSON.stringify(!r.ok && r.errors)}`);
      return { type: 'upsert' as const, config: r.value };
    }),
  );
  return new SecurityPolicyIndex(store.snapshot(), ROOT);
}

const names = (cs: readonly Config[] | undefined): string[] => (cs ?? []).map((c) => `${c.meta.namespace}/${c.meta.name}`);
const name = (c: Config | undefined): string | undefined => (c ? `${c.meta.namespace}/${c.meta.name}` : undefined);

/** `created`: metadata.creationTimestamp, as an API object carries it (files usually have none). */
const meta = (ns: string, n: string, created?: string): string =>
  `metadata: {name: ${n}, namespace: ${ns}${created ? `, creationTimestamp: "${created}"` : ''}}`;
const pa = (ns: string, n: string, body: string, created?: string): string =>
  `---\napiVersion: security.istio.io/v1\nkind: PeerAuthentication\n${meta(ns, n, created)}\nspec:\n${body}\n`;

describe('SecurityPolicyIndex.peerAuthentication', () => {
  const idx = index(
    pa(ROOT, 'mesh-b', '  mtls: {mode: PERMISSIVE}') +
      pa(ROOT, 'mesh-a', '  mtls: {mode: STRICT}') +
      pa(ROOT, 'root-selector', '  selector: {matchLabels: {app: web}}\n  mtls: {mode: DISABLE}') +
      pa('apps', 'ns-z', '  mtls: {mode: DISABLE}') +
      pa('apps', 'ns-y', '  selector: {}\n  mtls: {mode: PERMISSIVE}') +
      pa('apps', 'web-2', '  selector: {matchLabels: {app: web}}\n  mtls: {mode: STRICT}') +
      pa('apps', 'web-1', '  selector: {matchLabels: {app: web, tier: front}}\n  mtls: {mode: DISABLE}'),
  );

  it('mesh = oldest root policy without selector; namespace = oldest local one (an empty selector counts as none)', () => {
    const sel = idx.peerAuthentication('apps', { app: 'db' });
    assert.equal(name(sel.mesh), 'istio-system/mesh-a');
    assert.equal(name(sel.namespace), 'apps/ns-y');
    assert.equal(sel.workload, undefined);
  });

  it('workload = oldest local policy whose selector matches; root-namespace selectors are ignored', () => {
    assert.equal(name(idx.peerAuthentication('apps', { app: 'web' }).workload), 'apps/web-2');
    assert.equal(name(idx.peerAuthentication('apps', { app: 'web', tier: 'front' }).workload), 'apps/web-1');
    assert.equal(idx.peerAuthentication('other', { app: 'web' }).workload, undefined);
  });

  it('a workload in the root namespace gets only the mesh policy', () => {
    const sel = idx.peerAuthentication(ROOT, { app: 'web' });
    assert.deepEqual([name(sel.mesh), sel.namespace, sel.workload], ['istio-system/mesh-a', undefined, undefined]);
  });
});

describe('SecurityPolicyIndex: the oldest policy wins by creation time, then name (istiod)', () => {
  // Name order and creation order disagree at every level: the names that sort first were created last.
  const idx = index(
    pa(ROOT, 'a-mesh', '  mtls: {mode: DISABLE}', '2024-03-01T00:00:00Z') +
      pa(ROOT, 'z-mesh', '  mtls: {mode: STRICT}', '2024-01-01T00:00:00Z') +
      pa('apps', 'a-ns', '  mtls: {mode: DISABLE}', '2024-03-01T00:00:00Z') +
      pa('apps', 'z-ns', '  mtls: {mode: STRICT}', '2024-01-01T00:00:00Z') +
      pa('apps', 'a-web', '  selector: {matchLabels: {app: web}}\n  mtls: {mode: PERMISSIVE}', '2024-03-01T00:00:00Z') +
      pa('apps', 'z-web', '  selector: {matchLabels: {app: web}}\n  mtls: {mode: STRICT}', '2024-01-01T00:00:00Z') +
      pa('files', 'z-file', '  mtls: {mode: STRICT}') +
      pa('files', 'a-api', '  mtls: {mode: DISABLE}', '2024-01-01T00:00:00Z') +
      pa('ties', 'b-tie', '  mtls: {mode: DISABLE}', '2024-01-01T00:00:00Z') +
      pa('ties', 'a-tie', '  mtls: {mode: STRICT}', '2024-01-01T00:00:00Z'),
  );

  it('mesh, namespace and workload levels each take the oldest, not the first by name', () => {
    const sel = idx.peerAuthentication('apps', { app: 'web' });
    assert.deepEqual([name(sel.mesh), name(sel.namespace), name(sel.workload)], ['istio-system/z-mesh', 'apps/z-ns', 'apps/z-web']);
    assert.equal(idx.effectiveMtls('apps', { app: 'web' }).mode, 'STRICT');
    assert.equal(idx.effectiveMtls('apps', {}).mode, 'STRICT');
  });

  it('an object without creation time (from a file) counts as oldest; equal times go by name', () => {
    assert.equal(name(idx.peerAuthentication('files', {}).namespace), 'files/z-file');
    assert.equal(name(idx.peerAuthentication('ties', {}).namespace), 'ties/a-tie');
  });
});

describe('SecurityPolicyIndex.effectiveMtls', () => {
  it('defaults to PERMISSIVE with no policy', () => {
    const eff = index('').effectiveMtls('apps', {});
    assert.equal(eff.mode, 'PERMISSIVE');
    assert.equal(eff.portModes.size, 0);
  });

  it('narrower scopes override wider ones; UNSET inherits', () => {
    const idx = index(
      pa(ROOT, 'default', '  mtls: {mode: STRICT}') +
        pa('legacy', 'default', '  mtls: {mode: DISABLE}') +
        pa('inherit', 'default', '  mtls: {mode: UNSET}') +
        pa('legacy', 'db', '  selector: {matchLabels: {app: db}}\n  mtls: {mode: PERMISSIVE}') +
        pa('legacy', 'unset', '  selector: {matchLabels: {app: unset}}'),
    );
    assert.equal(idx.effectiveMtls('apps', {}).mode, 'STRICT', 'mesh');
    assert.equal(idx.effectiveMtls('inherit', {}).mode, 'STRICT', 'namespace UNSET inherits mesh');
    assert.equal(idx.effectiveMtls('legacy', {}).mode, 'DISABLE', 'namespace overrides mesh');
    assert.equal(idx.effectiveMtls('legacy', { app: 'db' }).mode, 'PERMISSIVE', 'workload overrides namespace');
    assert.equal(idx.effectiveMtls('legacy', { app: 'unset' }).mode, 'DISABLE', 'workload without mtls inherits namespace');
  });

  it('port-level modes come from the workload policy; an UNSET port takes the workload mode', () => {
    const idx = index(
      pa(ROOT, 'default', '  mtls: {mode: PERMISSIVE}') +
        pa(
          'apps',
          'db',
          '  selector: {matchLabels: {app: db}}\n  portLevelMtls:\n    "5432": {mode: DISABLE}\n    "9000": {}\n    "8443": {mode: STRICT}',
        ) +
        pa('apps', 'strict', '  selector: {matchLabels: {app: s}}\n  mtls: {mode: STRICT}\n  portLevelMtls:\n    "9000": {mode: UNSET}'),
    );
    const db = idx.effectiveMtls('apps', { app: 'db' });
    assert.equal(db.mode, 'PERMISSIVE');
    assert.deepEqual(
      [...db.portModes].sort(([a], [b]) => a - b),
      [
        [5432, 'DISABLE'],
        [8443, 'STRICT'],
        [9000, 'PERMISSIVE'],
      ],
    );
    assert.equal(mtlsModeForPort(db, 5432), 'DISABLE');
    assert.equal(mtlsModeForPort(db, 80), 'PERMISSIVE');
    const s = idx.effectiveMtls('apps', { app: 's' });
    assert.equal(mtlsModeForPort(s, 9000), 'STRICT');
    assert.equal(mtlsModeForPort(s, 80), 'STRICT');
  });
});

const ap = (ns: string, n: string, body: string, created?: string): string =>
  `---\napiVersion: security.istio.io/v1\nkind: AuthorizationPolicy\n${meta(ns, n, created)}\nspec:\n${body}\n`;

describe('SecurityPolicyIndex.authorizationPolicies', () => {
  const idx = index(
    ap(ROOT, 'mesh-deny', '  action: DENY\n  rules: [{from: [{source: {namespaces: [evil]}}]}]') +
      ap(ROOT, 'mesh-web-audit', '  action: AUDIT\n  selector: {matchLabels: {app: web}}\n  rules: [{}]') +
      ap('apps', 'b-allow', '  rules: [{}]') +
      ap('apps', 'a-allow-web', '  selector: {matchLabels: {app: web}}\n  rules: [{}]') +
      ap('apps', 'ext', '  action: CUSTOM\n  provider: {name: ext-authz}\n  rules: [{}]') +
      ap('apps', 'waypoint', '  targetRefs: [{kind: Service, group: "", name: web}]\n  rules: [{}]') +
      ap('apps', 'gw', '  targetRefs: [{kind: Gateway, group: gateway.networking.k8s.io, name: public}]\n  action: DENY\n  rules: [{}]') +
      ap('other', 'allow', '  rules: [{}]'),
  );

  it('root-namespace policies apply everywhere, local ones to their namespace; selectors must match', () => {
    const web = idx.authorizationPolicies('apps', { app: 'web' });
    assert.deepEqual(names(web.allow), ['apps/a-allow-web', 'apps/b-allow']);
    assert.deepEqual(names(web.deny), ['istio-system/mesh-deny']);
    assert.deepEqual(names(web.audit), ['istio-system/mesh-web-audit']);
    assert.deepEqual(names(web.custom), ['apps/ext']);

    const db = idx.authorizationPolicies('apps', { app: 'db' });
    assert.deepEqual(names(db.allow), ['apps/b-allow']);
    assert.deepEqual(names(db.audit), []);

    const other = idx.authorizationPolicies('other', { app: 'web' });
    assert.deepEqual(
      [names(other.allow), names(other.deny), names(other.audit)],
      [['other/allow'], ['istio-system/mesh-deny'], ['istio-system/mesh-web-audit']],
    );
  });

  it('targetRef policies never attach to sidecars; a Gateway API gateway takes the one naming its Gateway', () => {
    const sidecar = idx.authorizationPolicies('apps', { app: 'web' });
    assert.ok(!names(sidecar.allow).includes('apps/waypoint'));
    assert.ok(!names(sidecar.deny).includes('apps/gw'));
    const gateway = idx.authorizationPolicies('apps', { 'gateway.networking.k8s.io/gateway-name': 'public' });
    assert.deepEqual(names(gateway.deny), ['istio-system/mesh-deny', 'apps/gw']);
    assert.deepEqual(names(gateway.allow), ['apps/b-allow'], 'selector-less policies still apply to the gateway');
    const otherGateway = idx.authorizationPolicies('other', { 'gateway.networking.k8s.io/gateway-name': 'public' });
    assert.deepEqual(names(otherGateway.deny), ['istio-system/mesh-deny'], 'targetRefs bind only in the policy namespace');
  });
});

describe('SecurityPolicyIndex.requestAuthentications', () => {
  const ra = (ns: string, n: string, body: string, created?: string): string =>
    `---\napiVersion: security.istio.io/v1\nkind: RequestAuthentication\n${meta(ns, n, created)}\nspec:\n${body}\n  jwtRules: [{issuer: "https://${n}.example.com"}]\n`;
  const idx = index(
    ra(ROOT, 'mesh', '  selector: {matchLabels: {jwt: "on"}}') +
      ra('apps', 'all', '') +
      ra('apps', 'web', '  selector: {matchLabels: {app: web}}') +
      ra('apps', 'gw', '  targetRefs: [{kind: Gateway, group: gateway.networking.k8s.io, name: public}]'),
  );

  it('own namespace first, then root; selectors must match; targetRef policies skip sidecars', () => {
    assert.deepEqual(names(idx.requestAuthentications('apps', { app: 'web', jwt: 'on' })), ['apps/all', 'apps/web', 'istio-system/mesh']);
    assert.deepEqual(names(idx.requestAuthentications('apps', { app: 'db' })), ['apps/all']);
    assert.deepEqual(names(idx.requestAuthentications('other', { jwt: 'on' })), ['istio-system/mesh']);
    assert.deepEqual(names(idx.requestAuthentications('apps', { 'gateway.networking.k8s.io/gateway-name': 'public' })), [
      'apps/all',
      'apps/gw',
    ]);
  });
});

describe('SecurityPolicyIndex: policy lists in creation order, as istiod lists them', () => {
  it('AuthorizationPolicies: root namespace first, each namespace oldest first', () => {
    const idx = index(
      ap('apps', 'a-new', '  rules: [{}]', '2024-03-01T00:00:00Z') +
        ap('apps', 'b-old', '  rules: [{}]', '2024-01-01T00:00:00Z') +
        ap('apps', 'c-file', '  rules: [{}]') +
        ap(ROOT, 'z-mesh', '  rules: [{}]', '2024-05-01T00:00:00Z'),
    );
    assert.deepEqual(names(idx.authorizationPolicies('apps', {}).allow), [
      'istio-system/z-mesh',
      'apps/c-file',
      'apps/b-old',
      'apps/a-new',
    ]);
  });

  it('RequestAuthentications: own namespace oldest first, then root', () => {
    const ra = (ns: string, n: string, created?: string): string =>
      `---\napiVersion: security.istio.io/v1\nkind: RequestAuthentication\n${meta(ns, n, created)}\nspec:\n  jwtRules: [{issuer: "https://${n}.example.com"}]\n`;
    const idx = index(ra('apps', 'a-new', '2024-03-01T00:00:00Z') + ra('apps', 'b-old', '2024-01-01T00:00:00Z') + ra(ROOT, 'mesh'));
    assert.deepEqual(names(idx.requestAuthentications('apps', {})), ['apps/b-old', 'apps/a-new', 'istio-system/mesh']);
  });
});
