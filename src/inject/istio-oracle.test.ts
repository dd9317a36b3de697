/**
 * istiod as the oracle: 40 of Istio's own injection test cases (pkg/kube/inject/testdata/inject, vendored
 * in testdata/inject/istio with SOURCE.md) — input workload and the pod istiod injected from it
 * with the same templates and chart values — must come out the same from meshpilot.
 *
 * Istio's goldens are kube-inject output, which went through Go's typed corev1 round trip; the
 * comparison therefore ignores what that round trip (and the API server) normalises: empty
 * objects, nulls and empty strings, and resource quantity spelling (2000m = "2", 1024Mi = 1Gi).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import { parseAllDocuments } from 'yaml';
import { builtinInjector, type Values } from './config.js';
import type { InjectionConfig } from './inject.js';
import { kubeInject } from './kube-inject.js';
import { createJsonPatch } from './json-patch.js';
import type { JsonValue } from '../util/json-patch.js';
import { defaultMeshConfig } from './mesh.js';
import { CompiledTemplates, type JsonObject } from './render.js';
import type { MeshConfig } from '../gen/mesh/v1alpha1/config_pb.js';

const DIR = path.resolve(import.meta.dirname, '../../testdata/inject/istio');

function docs(file: string): JsonObject[] {
  return parseAllDocuments(readFileSync(path.join(DIR, file), 'utf8'))
    .map((d) => d.toJS() as JsonObject | null)
    .filter((d): d is JsonObject => d !== null);
}

const SUFFIX: Readonly<Record<string, bigint>> = {
  n: 1n,
  u: 1000n,
  m: 1_000_000n,
  '': 1_000_000_000n,
  k: 10n ** 12n,
  M: 10n ** 15n,
  G: 10n ** 18n,
  T: 10n ** 21n,
  P: 10n ** 24n,
  E: 10n ** 27n,
  Ki: 1024n * 10n ** 9n,
  Mi: 1024n ** 2n * 10n ** 9n,
  Gi: 1024n ** 3n * 10n ** 9n,
  Ti: 1024n ** 4n * 10n ** 9n,
};

/** A quantity in nano-units, so that 2000m and "2" compare equal. */
function quantity(v: JsonValue): string {
  const m = /^(\d+)(?:\.(\d+))?(n|u|m|k|M|G|T|P|E|Ki|Mi|Gi|Ti)?$/.exec(String(v));
  if (m === null) return String(v);
  const frac = m[2] ?? '';
  const unit = SUFFIX[m[3] ?? ''] ?? 1n;
  return `quantity:${(BigInt(m[1] + frac) * unit) / 10n ** BigInt(frac.length)}`;
}

/** int32 fields with omitempty (Probe): Go drops a 0, the API server keeps none either. */
const OMIT_ZERO = new Set(['initialDelaySeconds', 'timeoutSeconds', 'periodSeconds', 'successThreshold', 'failureThreshold', 'hostPort']);

function normalize(v: JsonValue, key = ''): JsonValue | undefined {
  if (v === null || (v === 0 && OMIT_ZERO.has(key))) return undefined;
  // The user's containers as recorded by istiod went through the typed round trip too.
  if (key === 'proxy.istio.io/overrides' && typeof v === 'string') return normalize(JSON.parse(v) as JsonValue);
  if (Array.isArray(v)) return v.map((e) => normalize(e) ?? null);
  if (typeof v === 'object') {
    const out: JsonObject = {};
    for (const [k, e] of Object.entries(v)) {
      if (e === '') continue; // string fields are omitempty in corev1 (an env var's empty value)
      const n = key === 'limits' || key === 'requests' ? quantity(e) : normalize(e, k);
      if (n !== undefined) out[k] = n;
    }
    return Object.keys(out).length === 0 ? undefined : out;
  }
  return v;
}

interface Case {
  readonly input: string;
  readonly golden: string;
  readonly native?: boolean;
  readonly mesh?: (m: MeshConfig) => void;
  readonly values?: (v: Record<string, Record<string, unknown>>) => void;
  /** A kube-inject warning istiod prints for this input. */
  readonly warning?: string;
}

const CASES: readonly Case[] = [
  { input: 'hello.yaml', golden: 'hello.yaml.injected' },
  { input: 'hello.yaml', golden: 'hello-old-version.yaml.injected', native: false },
  { input: 'hello.yaml', golden: 'hello-tproxy.yaml.injected', mesh: (m) => void (m.defaultConfig!.interceptionMode = 1) },
  { input: 'hello.yaml', golden: 'hello-always.yaml.injected', values: (v) => void (v.global!.imagePullPolicy = 'Always') },
  {
    input: 'hello.yaml',
    golden: 'hello.proxyHoldsApplication.yaml.injected',
    values: (v) => void ((v.global!.proxy as Record<string, unknown>).holdApplicationUntilProxyStarts = true),
  },
  { input: 'pod.yaml', golden: 'pod-old-version.yaml.injected', native: false },
  { input: 'hello-probes.yaml', golden: 'hello-probes.yaml.injected' },
  { input: 'hello-probes-proxyHoldApplication-ProxyConfig.yaml', golden: 'hello-probes-proxyHoldApplication-ProxyConfig.yaml.injected' },
  { input: 'frontend.yaml', golden: 'frontend.yaml.injected' },
  { input: 'prometheus-scrape.yaml', golden: 'prometheus-scrape.yaml.injected' },
  { input: 'ready_live.yaml', golden: 'ready_live.yaml.injected' },
  { input: 'resource_annotations.yaml', golden: 'resource_annotations.yaml.injected' },
  { input: 'status_annotations.yaml', golden: 'status_annotations.yaml.injected' },
  {
    input: 'status_params.yaml',
    golden: 'status_params.yaml.injected',
    values: (v) =>
      Object.assign(v.global!.proxy as Record<string, unknown>, {
        statusPort: 123,
        readinessInitialDelaySeconds: 100,
        readinessPeriodSeconds: 200,
        readinessFailureThreshold: 300,
      }),
  },
  { input: 'user-volume.yaml', golden: 'user-volume.yaml.injected' },
  { input: 'named_port.yaml', golden: 'named_port.yaml.injected' },
  { input: 'two_container.yaml', golden: 'two_container.yaml.injected' },
  { input: 'multi-init.yaml', golden: 'multi-init.yaml.injected' },
  { input: 'https-probes.yaml', golden: 'https-probes.yaml.injected' },
  { input: 'tcp-probes.yaml', golden: 'tcp-probes.yaml.injected' },
  { input: 'hello-proxy-override.yaml', golden: 'hello-proxy-override.yaml.injected' },
  {
    input: 'traffic-annotations.yaml',
    golden: 'traffic-annotations.yaml.injected',
    mesh: (m) => void (m.defaultConfig!.proxyMetadata.ISTIO_META_TLS_CLIENT_KEY = '/etc/identity/client/keys/client-key.pem'),
  },
  { input: 'traffic-annotations-wildcards.yaml', golden: 'traffic-annotations-wildcards.yaml.injected' },
  { input: 'traffic-annotations-empty-includes.yaml', golden: 'traffic-annotations-empty-includes.yaml.injected' },
  { input: 'grpc-agent.yaml', golden: 'grpc-agent.yaml.injected' },
  { input: 'gateway.yaml', golden: 'gateway.yaml.injected' },
  { input: 'native-sidecar.yaml', golden: 'native-sidecar.yaml.injected' },
  { input: 'native-sidecar-opt-out.yaml', golden: 'native-sidecar-opt-out.yaml.injected' },
  { input: 'cronjob.yaml', golden: 'cronjob.yaml.injected' },
  { input: 'grpc-simple.yaml', golden: 'grpc-simple.yaml.injected' },
  { input: 'multiple-templates.yaml', golden: 'multiple-templates.yaml.injected' },
  { input: 'enable-core-dump.yaml', golden: 'enable-core-dump.yaml.injected' },
  { input: 'hello-probes-with-flag-unset-in-annotation.yaml', golden: 'hello-probes-with-flag-unset-in-annotation.yaml.injected' },
  { input: 'startup_live.yaml', golden: 'startup_live.yaml.injected' },
  { input: 'kubevirtInterfaces_list.yaml', golden: 'kubevirtInterfaces_list.yaml.injected' },
  { input: 'reroute-virtual-interfaces_list.yaml', golden: 'reroute-virtual-interfaces_list.yaml.injected' },
  { input: 'statefulset.yaml', golden: 'statefulset.yaml.injected' },
  { input: 'job.yaml', golden: 'job.yaml.injected' },
  { input: 'list.yaml', golden: 'list.yaml.injected' },
  {
    input: 'hello-host-network.yaml',
    golden: 'hello-host-network.yaml.injected',
    warning: 'Skipping injection because Deployment "hello-host-network" has host networking enabled',
  },
];

function configFor(c: Case): InjectionConfig {
  const { config, values } = builtinInjector();
  const v = structuredClone(values) as Record<string, Record<string, unknown>>;
  c.values?.(v);
  const mesh = defaultMeshConfig();
  c.mesh?.(mesh);
  return {
    injector: config,
    templates: new CompiledTemplates(config, {}),
    values: v as Values,
    mesh,
    revision: '',
    nativeSidecars: c.native ?? true,
  };
}

describe("istiod's injection goldens (kube-inject of Istio's test manifests)", () => {
  for (const c of CASES) {
    it(`${c.input} → ${c.golden}`, () => {
      const inputs = docs(c.input);
      const goldens = docs(c.golden);
      assert.equal(inputs.length, goldens.length);
      inputs.forEach((doc, i) => {
        const { object, warnings } = kubeInject(doc, configFor(c));
        if (c.warning !== undefined)
          assert.ok(
            warnings.some((w) => w.includes(c.warning ?? '')),
            JSON.stringify(warnings),
          );
        else assert.deepEqual(warnings, []);
        // Workload status is not injection's: Go's typed round trip writes zero counters into it.
        const got = normalize({ ...object, status: null }) ?? null;
        const expected = normalize({ ...(goldens[i] ?? {}), status: null }) ?? null;
        // The differences as JSON Patch paths first: far easier to read than a whole-document diff.
        assert.deepStrictEqual(createJsonPatch(expected, got), [], `${c.golden}: differs from istiod`);
        assert.deepStrictEqual(got, expected);
      });
    });
  }
});

describe("istiod's refusals of bad traffic annotations", () => {
  // Istio's test expects the lower-cased error to contain the annotation's short name.
  for (const name of ['includeipranges', 'excludeipranges', 'includeinboundports', 'excludeinboundports', 'excludeoutboundports']) {
    it(`traffic-annotations-bad-${name}.yaml is refused naming ${name}`, () => {
      const [doc] = docs(`traffic-annotations-bad-${name}.yaml`);
      assert.ok(doc !== undefined);
      assert.throws(
        () => kubeInject(doc, configFor({ input: '', golden: '' })),
        (err: Error) => err.message.toLowerCase().includes(name) && err.message.includes('invalid value'),
      );
    });
  }
});
