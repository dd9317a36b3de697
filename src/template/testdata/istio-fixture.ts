/**
 * Data shaped like istiod's SidecarTemplateData (Go structs as class instances, ints as bigint,
 * labels/annotations as map[string]string) and stand-ins for istiod's template functions, for the
 * Istio injection template test and benchmark. The Go program that produced
 * istio-injection-golden.json defines the same structs and functions.
 */
import { readFileSync } from 'node:fs';
import { goStringMap, marshalJson, marshalYaml, sprint, type TemplateFunc } from '../index.js';

interface PortJson { name?: string; containerPort: number; protocol?: string }
interface MetaJson { name: string; namespace: string; labels: Record<string, string>; annotations: Record<string, string> }
export interface Scenario {
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

export function dataOf(s: Scenario): Data {
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
export const ISTIOD_STANDINS: Record<string, TemplateFunc> = {
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

export function loadIstioFixture(): { templateText: string; scenarios: Scenario[]; golden: Record<string, string> } {
  const fixture = JSON.parse(readFileSync(new URL('./istio-injection-golden.json', import.meta.url), 'utf8')) as {
    scenarios: Scenario[];
    golden: Record<string, string>;
  };
  const templateText = readFileSync(new URL('./istio-injection-template.yaml', import.meta.url), 'utf8');
  return { templateText, ...fixture };
}
