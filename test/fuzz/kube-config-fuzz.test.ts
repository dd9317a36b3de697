/**
 * Through the Kubernetes source against a REAL kube-apiserver with Istio's CRDs
 * (structural, x-kubernetes-preserve-unknown-fields under spec): good objects updated into ones
 * the API server accepts but our validation rejects. Each must be reported with kind, namespace/
 * name and field, and skipped — the last good version stays — while later valid changes apply.
 * Istio's CRDs validate spec structurally (enums, types) and prune unknown fields, so only
 * semantic breakage (RE2, weights, ports, required hosts) gets through; the rest is counted as
 * refused or pruned. Few cases: each is a create, a patch and two waits against the API server.
 */
import assert from 'node:assert/strict';
import { isDeepStrictEqual } from 'node:util';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { formatConfigError, type ConfigError } from '../../src/config/config.js';
import { KINDS, type KindName } from '../../src/config/kinds.js';
import { KubeConfigSource } from '../../src/config/sources/kube/index.js';
import { ConfigStore } from '../../src/config/store.js';
import type { ConfigChange, ConfigSink } from '../../src/config/store-types.js';
import { silentLogger } from '../../src/util/log.js';
import { invalidUpdate, type PlannedDoc } from '../support/fuzz/config-mutations.js';
import { validObject, type FuzzKind, type FuzzObject } from '../support/fuzz/istio-objects.js';
import { fuzzParams } from '../support/fuzz/runs.js';
import { adminRequest, KUBE_SETUP_TIMEOUT_MS, kubeSkipReason, startKubeCluster, type KubeCluster } from '../support/kube.js';
import { IstioClient, type IstioObject } from '../support/kube-objects.js';
import { waitFor } from '../support/wait.js';

const skip = kubeSkipReason();

/** The REST path of an Istio kind's objects in a namespace (or of one object). */
function objectPath(kind: KindName, namespace: string, name?: string): string {
  const info = KINDS[kind];
  return `/apis/${info.group}/${info.versions[0] ?? 'v1'}/namespaces/${namespace}/${info.plural}${name !== undefined ? `/${name}` : ''}`;
}

class Sink implements ConfigSink {
  readonly store = new ConfigStore();
  errors: readonly ConfigError[] = [];
  apply(changes: readonly ConfigChange[]): void {
    this.store.apply(changes);
  }
  reportErrors(_source: string, errors: readonly ConfigError[]): void {
    this.errors = errors;
  }
}

/** Always tried first, so every run reaches our validation at least once (the CRD lets an RE2 error through). */
const REGEX_EXAMPLE: { good: FuzzObject; bad: PlannedDoc } = (() => {
  const good: FuzzObject = {
    apiVersion: 'networking.istio.io/v1',
    kind: 'VirtualService',
    metadata: { name: 'example', namespace: 'default' },
    spec: { hosts: ['a.default.svc.cluster.local'], http: [{ route: [{ destination: { host: 'a.default.svc.cluster.local' } }] }] },
  };
  const bad = {
    ...good,
    spec: {
      ...good.spec,
      http: [{ match: [{ uri: { regex: '(?<=a)b' } }], route: [{ destination: { host: 'a.default.svc.cluster.local' } }] }],
    },
  };
  return {
    good,
    bad: {
      value: bad,
      expect: {
        kind: 'invalid',
        key: 'VirtualService/default/example',
        errorKind: 'VirtualService',
        nameReadable: true,
        path: 'spec.http[0].match[0].uri.regex',
        mutation: 'invalid RE2 (?<=a)b',
      },
    },
  };
})();

describe('Kubernetes source: objects the API server accepts and our validation rejects (fuzzed)', { skip }, () => {
  let cluster: KubeCluster;
  let istio: IstioClient;
  let source: KubeConfigSource;
  const sink = new Sink();
  let ns = '';

  before(
    async () => {
      cluster = await startKubeCluster();
      await cluster.applyIstioCrds();
      istio = new IstioClient(cluster.clientNode);
      ns = await cluster.namespace('fuzz');
      source = new KubeConfigSource({ kubeConfig: cluster.kubeConfig, logger: silentLogger, backoff: { initialMs: 50, maxMs: 500 } });
      await source.start(sink);
    },
    { timeout: KUBE_SETUP_TIMEOUT_MS },
  );

  after(async () => {
    await source?.stop();
    await cluster?.stop();
  });

  const stored = (o: FuzzObject): string | undefined =>
    sink.store.snapshot().get(o.kind as KindName, o.metadata.namespace, o.metadata.name)?.meta.resourceVersion;

  it('each accepted invalid update is reported (kind, ns/name, field) and skipped; the last good version stays; a later valid change applies', async () => {
    let n = 0;
    let accepted = 0;
    const refused: string[] = [];
    const pruned: string[] = [];
    // Kinds whose semantic checks go beyond the CRD schema (regex, weights, ports, required hosts).
    const kinds = fc.constantFrom<FuzzKind>('VirtualService', 'ServiceEntry', 'Gateway', 'DestinationRule', 'WorkloadEntry');
    const cases = kinds.chain((kind) => validObject({ kind })).chain((o) => invalidUpdate(o).map((bad) => ({ good: o, bad })));
    await fc.assert(
      fc.asyncProperty(cases, async ({ good: g, bad }) => {
        assert.equal(bad.expect.kind, 'invalid');
        if (bad.expect.kind !== 'invalid') return;
        const name = `f-${++n}`;
        const good: FuzzObject = { ...g, metadata: { ...g.metadata, name, namespace: ns } };
        await istio.create(good as IstioObject);
        const goodVersion = await waitFor(() => stored(good), { description: `${good.kind} ${name} applied` });

        const spec = (bad.value as { spec?: unknown }).spec;
        // Raw JSON Patch: client-node's serializer would drop a `__proto__` key on the way.
        const res = await adminRequest(
          cluster.env,
          'PATCH',
          objectPath(good.kind as KindName, ns, name),
          [{ op: 'replace', path: '/spec', value: spec }],
          'application/json-patch+json',
        );
        const code = res.status;
        if (code !== 200) {
          refused.push(`${bad.expect.mutation}: ${code}`);
          return;
        }
        // Where the CRD's schema lists the fields, the API server prunes unknown ones: then the
        // stored object is still valid and nothing reaches our validation.
        const storedSpec = (JSON.parse(res.body) as { spec?: unknown }).spec;
        if (!isDeepStrictEqual(storedSpec, JSON.parse(JSON.stringify(spec)))) {
          pruned.push(bad.expect.mutation);
          return;
        }
        accepted++;
        const e = bad.expect;
        const reported = await waitFor(
          () => sink.errors.find((x) => x.kind === good.kind && x.namespace === ns && x.name === name && (x.path ?? '').startsWith(e.path)),
          {
            description: `an error for ${good.kind} ${ns}/${name} at ${e.path} (${e.mutation}); errors: ${sink.errors.map(formatConfigError).join('; ').slice(0, 800)}`,
          },
        );
        assert.match(reported.origin.file, new RegExp(`^k8s://${ns}/${good.kind}/${name}$`));
        assert.equal(stored(good), goodVersion, 'the last good version stays');

        // A later valid change (the next good object) still applies: checked by the next case's wait,
        // and here for the last one.
        const later: FuzzObject = { ...g, metadata: { ...g.metadata, name: `${name}-later`, namespace: ns } };
        await istio.create(later as IstioObject);
        await waitFor(() => stored(later), { description: `${later.kind} ${later.metadata.name} applied beside the invalid one` });
      }),
      { ...fuzzParams({ ci: 8, share: 0.001 }), examples: [[REGEX_EXAMPLE]] },
    );
    process.stderr.write(
      `# kube fuzz: ${accepted} invalid updates accepted by the API server and rejected by meshpilot; refused by the API server: ${refused.join(', ') || 'none'}; pruned by it: ${pruned.join(', ') || 'none'}\n`,
    );
    assert.ok(accepted > 0, 'no case reached our validation: the test checked nothing');
  });
});
