/**
 * PeerAuthentication → ztunnel DENY policies and the names a workload refers to, as istiod derives
 * them (pilot/pkg/serviceregistry/ambient/authorization.go: convertPeerAuthentication,
 * convertedSelectorPeerAuthentications; its testdata/peer-authn-*.yaml show the shapes).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { toJson, type JsonValue } from '@bufbuild/protobuf';
import type { Config } from '../../config/index.js';
import { AuthorizationSchema } from '../../gen/workloadapi/security/authorization_pb.js';
import { configOf, configsOf, pa, ROOT } from '../../../test/support/ambient-policy-fixtures.js';
import { convertPeerAuthentication, peerAuthenticationPolicyNames, staticStrictAuthorization } from './peer-authentication-convert.js';

const DENY_PLAINTEXT = { notPrincipals: [{ presence: {} }] };
const STATIC = `${ROOT}/istio_converted_static_strict`;
const CONVERTED = 'foo/converted_peer_authentication_workload';

const workload = (spec: string): string => pa('foo', 'workload', `selector: {matchLabels: {app: a}}\n${spec}`);
const nsPolicy = (mode: string): string => pa('foo', 'default-foo', `mtls: {mode: ${mode}}`);
const meshPolicy = (mode: string): string => pa(ROOT, 'default-mesh', `mtls: {mode: ${mode}}`);

interface Case {
  readonly name: string;
  /** The PeerAuthentication converted. */
  readonly workload: string;
  readonly namespace?: string;
  readonly mesh?: string;
  readonly want: JsonValue | undefined;
  /** What a workload selected by it lists (its namespace and mesh policies apply too). */
  readonly names: readonly string[];
}

const denyOn = (port: number): JsonValue => ({ rules: [{ matches: [{ ...DENY_PLAINTEXT, destinationPorts: [port] }] }] });
const converted = (groups: JsonValue[]): JsonValue => ({
  name: 'converted_peer_authentication_workload',
  namespace: 'foo',
  scope: 'WORKLOAD_SELECTOR',
  action: 'DENY',
  groups,
});

const CASES: readonly Case[] = [
  {
    name: 'STRICT with a PERMISSIVE port: deny plaintext except on that port; the static policy is left off',
    workload: workload('mtls: {mode: STRICT}\nportLevelMtls: {9090: {mode: PERMISSIVE}}'),
    want: converted([{ rules: [{ matches: [DENY_PLAINTEXT] }, { matches: [{ notDestinationPorts: [9090] }] }] }]),
    names: [CONVERTED],
  },
  {
    name: 'STRICT with a DISABLE port: the same exception',
    workload: workload('mtls: {mode: STRICT}\nportLevelMtls: {9090: {mode: DISABLE}}'),
    want: converted([{ rules: [{ matches: [DENY_PLAINTEXT] }, { matches: [{ notDestinationPorts: [9090] }] }] }]),
    names: [CONVERTED],
  },
  {
    name: 'STRICT with only STRICT ports: nothing to convert, the static policy applies',
    workload: workload('mtls: {mode: STRICT}\nportLevelMtls: {9090: {mode: STRICT}}'),
    want: undefined,
    names: [STATIC],
  },
  {
    name: 'PERMISSIVE with STRICT ports: one group per port, in port order; PERMISSIVE ports add nothing',
    workload: workload('mtls: {mode: PERMISSIVE}\nportLevelMtls: {9090: {mode: STRICT}, 8080: {mode: STRICT}, 7070: {mode: PERMISSIVE}}'),
    want: converted([denyOn(8080), denyOn(9090)]),
    names: [CONVERTED],
  },
  {
    name: 'DISABLE with a STRICT port',
    workload: workload('mtls: {mode: DISABLE}\nportLevelMtls: {9090: {mode: STRICT}}'),
    namespace: nsPolicy('STRICT'),
    want: converted([denyOn(9090)]),
    names: [CONVERTED],
  },
  {
    name: 'PERMISSIVE with only PERMISSIVE ports: nothing, and no static policy',
    workload: workload('mtls: {mode: PERMISSIVE}\nportLevelMtls: {9090: {mode: PERMISSIVE}}'),
    mesh: meshPolicy('STRICT'),
    want: undefined,
    names: [],
  },
  {
    name: 'UNSET under PERMISSIVE namespace and mesh: STRICT ports each get a group',
    workload: workload('portLevelMtls: {9090: {mode: STRICT}, 8080: {mode: STRICT}}'),
    namespace: nsPolicy('PERMISSIVE'),
    mesh: meshPolicy('PERMISSIVE'),
    want: converted([denyOn(8080), denyOn(9090)]),
    names: [CONVERTED],
  },
  {
    name: 'UNSET under a STRICT namespace, PERMISSIVE port: the exception with the inherited STRICT folded in',
    workload: workload('portLevelMtls: {9090: {mode: PERMISSIVE}}'),
    namespace: nsPolicy('STRICT'),
    mesh: meshPolicy('PERMISSIVE'),
    want: converted([{ rules: [{ matches: [{ notDestinationPorts: [9090] }] }, { matches: [DENY_PLAINTEXT] }] }]),
    names: [CONVERTED],
  },
  {
    name: 'UNSET under a STRICT mesh (no namespace policy), PERMISSIVE port: merged likewise',
    workload: workload('portLevelMtls: {9090: {mode: PERMISSIVE}, 8080: {mode: STRICT}}'),
    mesh: meshPolicy('STRICT'),
    want: converted([{ rules: [{ matches: [{ notDestinationPorts: [9090] }] }, { matches: [DENY_PLAINTEXT] }] }]),
    names: [CONVERTED],
  },
  {
    name: 'UNSET under an UNSET namespace and PERMISSIVE mesh: STRICT port denied, PERMISSIVE port left alone',
    workload: workload('portLevelMtls: {9090: {mode: STRICT}, 8080: {mode: PERMISSIVE}}'),
    namespace: nsPolicy('UNSET'),
    mesh: meshPolicy('PERMISSIVE'),
    want: converted([denyOn(9090)]),
    names: [CONVERTED],
  },
  {
    name: 'UNSET with a PERMISSIVE port and nothing around it: nothing',
    workload: workload('portLevelMtls: {9090: {mode: PERMISSIVE}}'),
    want: undefined,
    names: [],
  },
  {
    name: 'UNSET ports inherit: nothing to convert',
    workload: workload('mtls: {mode: PERMISSIVE}\nportLevelMtls: {9090: {mode: UNSET}}'),
    want: undefined,
    names: [],
  },
  // istiod's two halves disagree in these cases; both are kept as istiod has them.
  {
    name: 'PERMISSIVE with a STRICT port under a STRICT mesh: istiod skips the port (its condition ignores the workload mode) yet the workload refers to the policy',
    workload: workload('mtls: {mode: PERMISSIVE}\nportLevelMtls: {9090: {mode: STRICT}}'),
    mesh: meshPolicy('STRICT'),
    want: undefined,
    names: [CONVERTED],
  },
  {
    name: 'UNSET with a DISABLE port under a STRICT namespace: converted, but the workload keeps the static policy (only PERMISSIVE counts there)',
    workload: workload('portLevelMtls: {9090: {mode: DISABLE}}'),
    namespace: nsPolicy('STRICT'),
    want: converted([{ rules: [{ matches: [{ notDestinationPorts: [9090] }] }, { matches: [DENY_PLAINTEXT] }] }]),
    names: [STATIC],
  },
];

describe('convertPeerAuthentication and peerAuthenticationPolicyNames', () => {
  for (const c of CASES) {
    it(c.name, () => {
      const target = configOf('PeerAuthentication', c.workload);
      const ns = c.namespace === undefined ? undefined : configOf('PeerAuthentication', c.namespace);
      const mesh = c.mesh === undefined ? undefined : configOf('PeerAuthentication', c.mesh);
      const out = convertPeerAuthentication(ROOT, target, ns, mesh);
      assert.deepEqual(out && toJson(AuthorizationSchema, out), c.want);
      const applying = [target, ...(ns ? [ns] : []), ...(mesh ? [mesh] : [])];
      assert.deepEqual(peerAuthenticationPolicyNames(ROOT, applying), c.names);
    });
  }

  // (Validation already refuses port-level mTLS on a policy without selector labels.)
  it('only a workload policy outside the root namespace with port-level mTLS is converted', () => {
    const notConverted = [
      pa(ROOT, 'root-selector', 'selector: {matchLabels: {app: a}}\nmtls: {mode: STRICT}\nportLevelMtls: {9090: {mode: PERMISSIVE}}'),
      pa('foo', 'no-ports', 'selector: {matchLabels: {app: a}}\nmtls: {mode: PERMISSIVE}'),
    ];
    for (const y of notConverted)
      assert.equal(convertPeerAuthentication(ROOT, configOf('PeerAuthentication', y), undefined, undefined), undefined);
  });

  it('the static STRICT policy: a DENY of plaintext in the root namespace', () => {
    assert.deepEqual(toJson(AuthorizationSchema, staticStrictAuthorization(ROOT)), {
      name: 'istio_converted_static_strict',
      namespace: ROOT,
      scope: 'WORKLOAD_SELECTOR',
      action: 'DENY',
      groups: [{ rules: [{ matches: [DENY_PLAINTEXT] }] }],
    });
  });

  it('names: effective mode from mesh, namespace, workload in turn (UNSET inherits); root selectors ignored', () => {
    const names = (yaml: string): string[] => peerAuthenticationPolicyNames(ROOT, configsOf(yaml) as Config<'PeerAuthentication'>[]);
    assert.deepEqual(names(meshPolicy('STRICT')), [STATIC]);
    assert.deepEqual(names(meshPolicy('STRICT') + nsPolicy('UNSET')), [STATIC]);
    assert.deepEqual(names(meshPolicy('STRICT') + nsPolicy('PERMISSIVE')), []);
    assert.deepEqual(names(meshPolicy('PERMISSIVE') + nsPolicy('STRICT')), [STATIC]);
    assert.deepEqual(names(nsPolicy('STRICT') + workload('mtls: {mode: PERMISSIVE}')), []);
    assert.deepEqual(names(nsPolicy('DISABLE') + workload('mtls: {mode: STRICT}')), [STATIC]);
    assert.deepEqual(names(nsPolicy('STRICT') + workload('mtls: {mode: UNSET}')), [STATIC]);
    // An empty selector counts as namespace-wide here.
    assert.deepEqual(names(pa('foo', 'empty-selector', 'selector: {}\nmtls: {mode: STRICT}')), [STATIC]);
    assert.deepEqual(names(pa(ROOT, 'root-selector', 'selector: {matchLabels: {app: a}}\nmtls: {mode: STRICT}')), []);
  });

  it('oldest wins: creation time (none counts as oldest), then name', () => {
    const created = (name: string, mode: string, at: string): string =>
      `---\napiVersion: security.istio.io/v1\nkind: PeerAuthentication\nmetadata: {name: ${name}, namespace: foo, creationTimestamp: "${at}"}\nspec: {mtls: {mode: ${mode}}}\n`;
    const names = (yaml: string): string[] => peerAuthenticationPolicyNames(ROOT, configsOf(yaml) as Config<'PeerAuthentication'>[]);
    // By name, a-strict would decide (STRICT); by creation time, the older z-disable does.
    const later = created('a-strict', 'STRICT', '2024-03-01T00:00:00Z');
    assert.deepEqual(names(later + created('z-disable', 'DISABLE', '2024-01-01T00:00:00Z')), []);
    assert.deepEqual(names(later + created('z-disable', 'DISABLE', '2024-06-01T00:00:00Z')), [STATIC]);
    // A file object has no creation time: older than any API object.
    assert.deepEqual(names(later + pa('foo', 'z-file', 'mtls: {mode: DISABLE}')), []);
  });
});
