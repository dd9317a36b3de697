/**
 * ztunnel's policies held to istiod: for the objects of testdata/ambient-policies/policies.yaml,
 * every Authorization meshpilot serves equals, whole, what the real istiod sent a ztunnel, none
 * missing and none extra, and each workload lists the same `authorization_policies` in the same
 * order. istiod's side is committed (istiod.json, captured on a real API server by
 * `npx tsx scripts/istiod-ambient-policies-golden.ts`), so this runs without istiod or a cluster.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { toJson, type JsonValue } from '@bufbuild/protobuf';
import { ConfigStore } from '../../src/config/store.js';
import { AuthorizationSchema } from '../../src/gen/workloadapi/security/authorization_pb.js';
import { workloadPolicyNames, ztunnelAuthorizations } from '../../src/model/ambient/policies.js';
import { defaultMeshConfig } from '../../src/config/mesh/mesh-config.js';
import { PushContext } from '../../src/model/push-context.js';
import { configsOf } from '../support/ambient-policy-fixtures.js';
import { REPO_ROOT } from '../support/paths.js';

interface Golden {
  readonly authorizations: Readonly<Record<string, JsonValue>>;
  readonly workloads: readonly {
    readonly namespace: string;
    readonly name: string;
    readonly labels: Record<string, string>;
    readonly authorizationPolicies: readonly string[];
  }[];
}

const DIR = join(REPO_ROOT, 'testdata', 'ambient-policies');
const golden = JSON.parse(readFileSync(join(DIR, 'istiod.json'), 'utf8')) as Golden;
const store = new ConfigStore();
store.apply(configsOf(readFileSync(join(DIR, 'policies.yaml'), 'utf8')).map((config) => ({ type: 'upsert' as const, config })));
const push = new PushContext({ version: 'v1', mesh: defaultMeshConfig(), config: store.snapshot() });

describe('ambient policies held to istiod', () => {
  const ours = new Map(ztunnelAuthorizations(push).map((a) => [`${a.namespace}/${a.name}`, toJson(AuthorizationSchema, a)]));

  it('the same set of Authorization resources', () => {
    assert.deepEqual([...ours.keys()].sort(), Object.keys(golden.authorizations).sort());
  });

  for (const [name, want] of Object.entries(golden.authorizations)) {
    it(`Authorization ${name}`, () => assert.deepEqual(ours.get(name), want));
  }

  for (const w of golden.workloads) {
    it(`authorization_policies of workload ${w.namespace}/${w.name} (labels ${JSON.stringify(w.labels)})`, () => {
      assert.deepEqual(workloadPolicyNames(push, w.namespace, w.labels), w.authorizationPolicies);
    });
  }
});
