/**
 * Istio's real sidecar injection template rendered by this engine must equal what Go's
 * text/template + Sprig render for the same data (testdata/istio-injection-golden.json "about").
 * The data mimics istiod's SidecarTemplateData with Go semantics: structs are class instances,
 * int fields are bigint, labels/annotations are map[string]string, enums print through String().
 * The istiod functions are simple stand-ins defined the same way in the Go program that produced
 * the golden outputs; the real ones live in src/inject.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { goStringMap, marshalJson, marshalYaml, parseTemplates, sprint, type TemplateFunc } from './index.js';

interface PortJson { name?: string; containerPort: number; protocol?: string }
interface MetaJson { name: string; namespace: string; labels: Record<string, string>; annotations: Record<string, string> }
interface Scenario {
  name: string;
  typeMeta: { kind: string; apiVersion: string };
  deploymentMeta: MetaJson;
  objectMeta: MetaJson;
  spec: { serviceAccountName: string; containers: Array<{ name: string; image: string; ports: PortJson[] }> };
  interceptionMode: number;
  holdApplicationUntilProxyStarts: boolean | null;
  proxyMetadata: Record<string, string>;
  meshConfig: { TrustDomain: string; ProxyListenPort: number; ProxyInboundListenPort: number };
  values: Record<string, unknown>;
  revision: string;
  nativeSidecars: boolean;
  proxyImage: string;
  proxyInitImage: string;
  proxyUID: number;
  proxyGID: number;
  compliancePolicy: string;
  inboundTrafficPolicyMode: string;
}

class ObjectMeta {
  readonly Name: string;
  readonly Namespace: string;
  readonly Labels: Record<string, string>;
  readonly Annotations: Record<string, string>;
  constructor(m: MetaJson) {
    this.Name = m.name;
    this.Namespace = m.namespace;
    this.Labels = goStringMap({ ...m.labels });
    this.Annotations = goStringMap({ ...m.annotations });
  }
}

class ContainerPort {
  readonly Name: string;
  readonly ContainerPort: bigint;
  readonly Protocol: string;
  constructor(p: PortJson) {
    this.Name = p.name ?? '';
    this.ContainerPort = BigInt(p.containerPort);
    this.Protocol = p.protocol ?? '';
  }
}

const MODES = ['REDIRECT', 'TPROXY', 'NONE'];
class InterceptionMode {
  constructor(readonly n: number) {}
  String(): string {
    return MODES[this.n] ?? String(this.n);
  }
}

/** *BoolValue: GetValue works on a nil pointer too (answers false). */
class BoolValue {
  constructor(readonly Value: boolean | null) {}
  GetValue(): boolean {
    return this.Value ?? false;
  }
}

class ProxyConfig {
  constructor(
    readonly InterceptionMode: InterceptionMode,
    readonly HoldApplicationUntilProxyStarts: BoolValue,
    readonly ProxyMetadata: Record<string, string>,
  ) {}
  GetTracing(): null {
    return null;
  }
}

class Data {
  constructor(readonly fields: Record<string, unknown>) {
    Object.assign(this, fields);
  }
}

function dataOf(s: Scenario): Data {
  return new Data({
    TypeMeta: new (class TypeMeta { Kind = s.typeMeta.kind; APIVersion = s.typeMeta.apiVersion })(),
    DeploymentMeta: new ObjectMeta(s.deploymentMeta),
    ObjectMeta: new ObjectMeta(s.objectMeta),
    Spec: new (class PodSpec {
      ServiceAccountName = s.spec.serviceAccountName;
      Containers = s.spec.containers.map((c) => new (class Container { Name = c.name; Image = c.image; Ports = c.ports.map((p) => new ContainerPort(p)) })());
    })(),
    ProxyConfig: new ProxyConfig(new InterceptionMode(s.interceptionMode), new BoolValue(s.holdApplicationUntilProxyStarts), goStringMap({ ...s.proxyMetadata })),
    MeshConfig: new (class MeshConfig {
      TrustDomain = s.meshConfig.TrustDomain;
      ProxyListenPort = BigInt(s.meshConfig.ProxyListenPort);
      ProxyInboundListenPort = BigInt(s.meshConfig.ProxyInboundListenPort);
    })(),
    Values: structuredClone(s.values),
    Revision: s.revision,
    NativeSidecars: s.nativeSidecars,
    ProxyImage: s.proxyImage,
    ProxyInitImage: s.proxyInitImage,
    ProxyUID: BigInt(s.proxyUID),
    ProxyGID: BigInt(s.proxyGID),
    CompliancePolicy: s.compliancePolicy,
    InboundTrafficPolicyMode: s.inboundTrafficPolicyMode,
  });
}

/** Stand-ins for istiod's functions, the same as the Go program's. */
const ISTIOD_STANDINS: Record<string, TemplateFunc> = {
  isset: (m, key) => Object.prototype.hasOwnProperty.call(m as object, key as string),
  omitNil: (v) => v,
  annotation: (meta, name, def) => {
    const a = (meta as ObjectMeta).Annotations;
    return Object.prototype.hasOwnProperty.call(a, name as string) ? a[name as string] : sprint([def]);
  },
  appendMultusNetwork: (existing, net) => (existing === '' ? net : `${String(existing)}, ${String(net)}`),
  excludeInboundPort: (port, excluded) => (excluded === '' ? sprint([port]) : `${String(excluded)},${sprint([port])}`),
  valueOrDefault: (v, def) => (v === null || v === '' ? def : v),
  protoToJSON: (pc) => {
    const p = pc as ProxyConfig;
    const hold = p.HoldApplicationUntilProxyStarts.Value === null ? 'null' : `{"Value":${String(p.HoldApplicationUntilProxyStarts.Value)}}`;
    return `{"InterceptionMode":${p.InterceptionMode.n},"HoldApplicationUntilProxyStarts":${hold},"ProxyMetadata":${marshalJson(p.ProxyMetadata)},"Tracing":null}`;
  },
  structToJSON: (port) => {
    const p = port as ContainerPort;
    const parts = [...(p.Name !== '' ? [`"name":${JSON.stringify(p.Name)}`] : []), `"containerPort":${p.ContainerPort}`, ...(p.Protocol !== '' ? [`"protocol":${JSON.stringify(p.Protocol)}`] : [])];
    return `{${parts.join(',')}}`;
  },
  toLower: (s) => String(s).toLowerCase(),
  fromJSON: (j) => {
    try {
      return JSON.parse(String(j)) as unknown;
    } catch {
      return null;
    }
  },
  otelResourceAttributes: (_mc, _ann, labels, ns) => `${String(ns)}:${Object.keys(labels as object).sort().join(',')}`,
  directory: (p) => {
    const s = String(p);
    const i = s.lastIndexOf('/');
    return i < 0 ? '.' : i === 0 ? '/' : s.slice(0, i);
  },
  toYaml: (v) => marshalYaml(v).replace(/\n$/, ''),
  indent: (n, s) => String(s).split('\n').join('\n' + ' '.repeat(Number(n))),
};

const fixture = JSON.parse(readFileSync(new URL('./testdata/istio-injection-golden.json', import.meta.url), 'utf8')) as {
  scenarios: Scenario[];
  golden: Record<string, string>;
};
const templateText = readFileSync(new URL('./testdata/istio-injection-template.yaml', import.meta.url), 'utf8');

describe("Istio's injection template", () => {
  const set = parseTemplates([{ name: 'sidecar', text: templateText }], { funcs: ISTIOD_STANDINS });

  for (const s of fixture.scenarios) {
    it(`renders ${s.name} exactly as Go does`, () => {
      const expected = fixture.golden[s.name];
      assert.ok(expected !== undefined && !expected.startsWith('ERROR'), 'golden output exists');
      assert.equal(set.execute('sidecar', dataOf(s)), expected);
    });
  }

  it('executes in well under 5 ms per pod once parsed', () => {
    const data = fixture.scenarios.map(dataOf);
    for (let i = 0; i < 20; i++) set.execute('sidecar', data[i % data.length]);
    const n = 200;
    const start = process.hrtime.bigint();
    for (let i = 0; i < n; i++) set.execute('sidecar', data[i % data.length]);
    const perRunMs = Number(process.hrtime.bigint() - start) / 1e6 / n;
    assert.ok(perRunMs < 5, `execution took ${perRunMs.toFixed(3)} ms per pod`);
  });
});
