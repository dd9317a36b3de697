/**
 * The data the `kube-gateway` template sees: istiod's TemplateInput (the Gateway embedded, so
 * `.Name`, `.UID`, `.Spec.Addresses` resolve as on a Go struct) plus its derivedInput (proxy image,
 * ProxyConfig, MeshConfig and chart values from the injector config).
 */
import { type MeshConfig, MeshConfigSchema } from '../gen/mesh/v1alpha1/config_pb.js';
import { ProxyConfigSchema, type ProxyConfig } from '../gen/mesh/v1alpha1/proxy_pb.js';
import { type Values, GoStruct, k8sView, protoView, imageUrl } from '../inject/index.js';
import { goStringMap } from '../template/index.js';
import { rec, strings } from './json.js';
import type { GatewayDeployOptions } from './options.js';
import { GATEWAY_NAME_LABEL } from '../config/constants.js';

type Json = Record<string, unknown>;

/** corev1.ServicePort as the template reads it (AppProtocol prints through its pointer). */
export interface ServicePortInput {
  readonly name: string;
  readonly port: number;
  readonly protocol: 'TCP' | 'UDP';
  readonly appProtocol: string;
}

/** istiod's sanitizeListenerNameForPort: listener names allow dots and 253 characters, port names neither. */
function sanitizePortName(s: string): string {
  return s.replaceAll('.', '-').slice(0, 63);
}

/** istiod's uniquePortName: at most 63 characters, disambiguated by the port number. */
function uniquePortName(name: string, port: number, used: Set<string>): string {
  const base = name.slice(0, 63);
  let candidate = base;
  for (let suffix = `-${port}`; used.has(candidate); suffix += 'x') candidate = base.slice(0, 63 - suffix.length) + suffix;
  used.add(candidate);
  return candidate;
}

/** istiod's extractServicePorts: status-port first, then one port per distinct listener port. */
export function servicePorts(gateway: Json, quicListeners: boolean): ServicePortInput[] {
  const out: ServicePortInput[] = [{ name: 'status-port', port: 15021, protocol: 'TCP', appProtocol: 'tcp' }];
  const used = new Set(['status-port']);
  const seen = new Set<number>();
  const listeners = Array.isArray(rec(gateway.spec).listeners) ? (rec(gateway.spec).listeners as unknown[]) : [];
  listeners.forEach((l, i) => {
    const listener = rec(l);
    const port = typeof listener.port === 'number' ? listener.port : 0;
    if (seen.has(port)) return;
    seen.add(port);
    const protocol = typeof listener.protocol === 'string' ? listener.protocol : '';
    let name = sanitizePortName(typeof listener.name === 'string' ? listener.name : '');
    if (name === '') name = `${protocol.toLowerCase()}-${i}`;
    name = uniquePortName(name, port, used);
    const appProtocol = protocol.toLowerCase();
    out.push({ name, port, protocol: 'TCP', appProtocol });
    if (quicListeners && appProtocol === 'https')
      out.push({ name: uniquePortName(`${name}-quic`, port, used), port, protocol: 'UDP', appProtocol });
  });
  return out;
}

/** Keys under gateway.networking.k8s.io/ are the API's own and never copied onto the objects. */
function infraMeta(meta: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(meta).filter(([k]) => !k.startsWith('gateway.networking.k8s.io/')));
}

/** istiod's extractInfrastructureMetadata: spec.infrastructure wins, else a copy of the Gateway's own (when enabled). */
export function infrastructureMetadata(gateway: Json, which: 'labels' | 'annotations', copy: boolean): Record<string, string> {
  const infra = rec(rec(gateway.spec).infrastructure);
  if (infra[which] !== undefined && infra[which] !== null) return infraMeta(strings(infra[which]));
  return copy ? strings(rec(gateway.metadata)[which]) : {};
}

export interface TemplateInputArgs {
  readonly gateway: Json;
  readonly className: string;
  readonly deploymentName: string;
  readonly serviceAccount: string;
  readonly serviceType: string;
  readonly ports: readonly ServicePortInput[];
  readonly kubeVersion: number;
  readonly infrastructureLabels: Record<string, string>;
  readonly infrastructureAnnotations: Record<string, string>;
  readonly controllerLabel: string;
  readonly options: GatewayDeployOptions;
  readonly proxyConfig: ProxyConfig;
  readonly mesh: MeshConfig;
  readonly values: Values;
}

/** The Gateway's spec with the zero values of the fields a Go struct always has. */
function specView(spec: Json): GoStruct {
  const view = rec(k8sView(spec));
  return new GoStruct(spec, { GatewayClassName: '', Listeners: [], Addresses: [], Infrastructure: null, ...view });
}

/** Builds istiod's derivedInput for one Gateway. */
export function templateInput(a: TemplateInputArgs): GoStruct {
  const meta = rec(a.gateway.metadata);
  const objectMeta = k8sView(meta, 'metadata') as GoStruct;
  const annotations = strings(meta.annotations);
  const fields: Record<string, unknown> = {
    // The embedded *gateway.Gateway: its ObjectMeta's fields are promoted.
    ...rec(objectMeta),
    UID: typeof meta.uid === 'string' ? meta.uid : '',
    TypeMeta: k8sView({ apiVersion: a.gateway.apiVersion, kind: a.gateway.kind }),
    ObjectMeta: objectMeta,
    Spec: specView(rec(a.gateway.spec)),
    Status: k8sView(rec(a.gateway.status)),
    GatewayClass: a.className,
    DeploymentName: a.deploymentName,
    ServiceAccount: a.serviceAccount,
    Ports: a.ports.map((p) => new GoStruct(p, { Name: p.name, Port: BigInt(p.port), Protocol: p.protocol, AppProtocol: p.appProtocol })),
    ServiceType: a.serviceType,
    ClusterID: a.options.clusterId,
    KubeVersion: BigInt(a.kubeVersion),
    Revision: a.options.revision,
    NativeSidecars: true,
    ProxyUID: 1337n,
    ProxyGID: 1337n,
    CompliancePolicy: a.options.compliancePolicy,
    InfrastructureLabels: goStringMap({ ...a.infrastructureLabels }),
    InfrastructureAnnotations: goStringMap({ ...a.infrastructureAnnotations }),
    GatewayNameLabel: GATEWAY_NAME_LABEL,
    IsEastWestGateway: false,
    ControllerLabel: a.controllerLabel,
    ProxyImage: imageUrl(a.values, 'proxy', a.proxyConfig.image?.imageType ?? '', annotations),
    ProxyConfig: protoView(ProxyConfigSchema, a.proxyConfig),
    MeshConfig: protoView(MeshConfigSchema, a.mesh),
    Values: a.values,
  };
  return new GoStruct(a.gateway, fields);
}
