import { EnvoyFilterSchema, type EnvoyFilter } from '../gen/networking/v1alpha3/envoy_filter_pb.js';
import type { GenMessage } from '@bufbuild/protobuf/codegenv2';
import { StructSchema, type Struct } from '@bufbuild/protobuf/wkt';
import { DestinationRuleSchema, type DestinationRule } from '../gen/networking/v1alpha3/destination_rule_pb.js';
import { GatewaySchema, type Gateway } from '../gen/networking/v1alpha3/gateway_pb.js';
import { ServiceEntrySchema, type ServiceEntry } from '../gen/networking/v1alpha3/service_entry_pb.js';
import { SidecarSchema, type Sidecar } from '../gen/networking/v1alpha3/sidecar_pb.js';
import { VirtualServiceSchema, type VirtualService } from '../gen/networking/v1alpha3/virtual_service_pb.js';
import { WorkloadEntrySchema, type WorkloadEntry } from '../gen/networking/v1alpha3/workload_entry_pb.js';
import { WorkloadGroupSchema, type WorkloadGroup } from '../gen/networking/v1alpha3/workload_group_pb.js';
import { AuthorizationPolicySchema, type AuthorizationPolicy } from '../gen/security/v1beta1/authorization_policy_pb.js';
import { PeerAuthenticationSchema, type PeerAuthentication } from '../gen/security/v1beta1/peer_authentication_pb.js';
import { RequestAuthenticationSchema, type RequestAuthentication } from '../gen/security/v1beta1/request_authentication_pb.js';
import { TelemetrySchema, type Telemetry } from '../gen/telemetry/v1alpha1/telemetry_pb.js';
import { WasmPluginSchema, type WasmPlugin } from '../gen/extensions/v1alpha1/wasm_pb.js';
import { ProxyConfigSchema, type ProxyConfig } from '../gen/networking/v1beta1/proxy_config_pb.js';
import { servedVersions, type GatewayApiCrdKind } from './gateway-api/validate.js';
import { GATEWAY_API_GROUP } from './constants.js';

/** The spec message of each supported kind (generated from istio/api). */
export interface SpecByKind {
  ServiceEntry: ServiceEntry;
  WorkloadEntry: WorkloadEntry;
  /** The template VMs auto-register WorkloadEntries from (src/autoregistration). */
  WorkloadGroup: WorkloadGroup;
  VirtualService: VirtualService;
  DestinationRule: DestinationRule;
  Gateway: Gateway;
  Sidecar: Sidecar;
  EnvoyFilter: EnvoyFilter;
  PeerAuthentication: PeerAuthentication;
  RequestAuthentication: RequestAuthentication;
  AuthorizationPolicy: AuthorizationPolicy;
  Telemetry: Telemetry;
  WasmPlugin: WasmPlugin;
  ProxyConfig: ProxyConfig;
  /** A Kubernetes Secret (`type`, `data`, `stringData`): gateway credentials in directory mode. */
  Secret: Struct;
  // Gateway API (gateway.networking.k8s.io): Kubernetes types kept as JSON, checked against the
  // vendored CRD schema; typed views in gateway-api/types.ts.
  GatewayClass: Struct;
  /** Gateway API's `Gateway` (istiod calls it KubernetesGateway too: Istio's Gateway has the name). */
  KubernetesGateway: Struct;
  HTTPRoute: Struct;
  GRPCRoute: Struct;
  TCPRoute: Struct;
  TLSRoute: Struct;
  ReferenceGrant: Struct;
}

export type KindName = keyof SpecByKind;

export interface KindInfo<K extends KindName = KindName> {
  readonly kind: K;
  readonly group: string;
  /** Accepted apiVersion versions, newest first; all map onto the same spec message. */
  readonly versions: readonly string[];
  readonly plural: string;
  readonly schema: GenMessage<SpecByKind[K]>;
  /** For kinds without a `spec` (core Secrets): which top-level fields form the spec. */
  readonly specFields?: readonly string[];
  /** The `kind` written in YAML when it differs from the kind's name here (KubernetesGateway → Gateway). */
  readonly apiKind?: string;
}

const NETWORKING = 'networking.istio.io';
const NETWORKING_VERSIONS = ['v1', 'v1beta1', 'v1alpha3'] as const;

const SECURITY = 'security.istio.io';
const SECURITY_VERSIONS = ['v1', 'v1beta1'] as const;

function kind<K extends KindName>(k: K, plural: string, schema: GenMessage<SpecByKind[K]>): KindInfo<K> {
  return { kind: k, group: NETWORKING, versions: NETWORKING_VERSIONS, plural, schema };
}

function securityKind<K extends KindName>(k: K, plural: string, schema: GenMessage<SpecByKind[K]>): KindInfo<K> {
  return { kind: k, group: SECURITY, versions: SECURITY_VERSIONS, plural, schema };
}

type GatewayApiKindName = 'GatewayClass' | 'KubernetesGateway' | 'HTTPRoute' | 'GRPCRoute' | 'TCPRoute' | 'TLSRoute' | 'ReferenceGrant';

function gatewayApiKind<K extends GatewayApiKindName>(k: K, apiKind: GatewayApiCrdKind, plural: string): KindInfo<K> {
  const info: KindInfo<K> = {
    kind: k,
    group: GATEWAY_API_GROUP,
    versions: servedVersions(apiKind),
    plural,
    schema: StructSchema as unknown as GenMessage<SpecByKind[K]>,
  };
  return apiKind === k ? info : { ...info, apiKind };
}

export const KINDS: { readonly [K in KindName]: KindInfo<K> } = {
  ServiceEntry: kind('ServiceEntry', 'serviceentries', ServiceEntrySchema),
  WorkloadEntry: kind('WorkloadEntry', 'workloadentries', WorkloadEntrySchema),
  WorkloadGroup: kind('WorkloadGroup', 'workloadgroups', WorkloadGroupSchema),
  VirtualService: kind('VirtualService', 'virtualservices', VirtualServiceSchema),
  DestinationRule: kind('DestinationRule', 'destinationrules', DestinationRuleSchema),
  Gateway: kind('Gateway', 'gateways', GatewaySchema),
  Sidecar: kind('Sidecar', 'sidecars', SidecarSchema),
  EnvoyFilter: { kind: 'EnvoyFilter', group: NETWORKING, versions: ['v1alpha3'], plural: 'envoyfilters', schema: EnvoyFilterSchema },
  PeerAuthentication: securityKind('PeerAuthentication', 'peerauthentications', PeerAuthenticationSchema),
  RequestAuthentication: securityKind('RequestAuthentication', 'requestauthentications', RequestAuthenticationSchema),
  AuthorizationPolicy: securityKind('AuthorizationPolicy', 'authorizationpolicies', AuthorizationPolicySchema),
  Telemetry: {
    kind: 'Telemetry',
    group: 'telemetry.istio.io',
    versions: ['v1', 'v1alpha1'],
    plural: 'telemetries',
    schema: TelemetrySchema,
  },
  WasmPlugin: { kind: 'WasmPlugin', group: 'extensions.istio.io', versions: ['v1alpha1'], plural: 'wasmplugins', schema: WasmPluginSchema },
  ProxyConfig: { kind: 'ProxyConfig', group: NETWORKING, versions: ['v1beta1'], plural: 'proxyconfigs', schema: ProxyConfigSchema },
  Secret: {
    kind: 'Secret',
    group: '',
    versions: ['v1'],
    plural: 'secrets',
    schema: StructSchema,
    specFields: ['type', 'data', 'stringData'],
  },
  GatewayClass: gatewayApiKind('GatewayClass', 'GatewayClass', 'gatewayclasses'),
  KubernetesGateway: gatewayApiKind('KubernetesGateway', 'Gateway', 'gateways'),
  HTTPRoute: gatewayApiKind('HTTPRoute', 'HTTPRoute', 'httproutes'),
  GRPCRoute: gatewayApiKind('GRPCRoute', 'GRPCRoute', 'grpcroutes'),
  TCPRoute: gatewayApiKind('TCPRoute', 'TCPRoute', 'tcproutes'),
  TLSRoute: gatewayApiKind('TLSRoute', 'TLSRoute', 'tlsroutes'),
  ReferenceGrant: gatewayApiKind('ReferenceGrant', 'ReferenceGrant', 'referencegrants'),
};

export const KIND_NAMES = Object.keys(KINDS) as KindName[];

/** The `kind` to write in YAML for a kind. */
export const apiKindOf = (info: KindInfo): string => info.apiKind ?? info.kind;

/**
 * The kind a document's `kind` names. `Gateway` is Istio's unless the group (from apiVersion) is
 * Gateway API's; without a group the first kind of that name (Istio's) answers, as before.
 */
export function kindForApiKind(apiKind: string, group: string | undefined): KindInfo | undefined {
  let first: KindInfo | undefined;
  for (const name of KIND_NAMES) {
    const info: KindInfo = KINDS[name];
    if (apiKindOf(info) !== apiKind) continue;
    if (group === undefined || info.group === group) return info;
    first ??= info;
  }
  return first;
}

/** Finds the kind for an `apiVersion` + `kind` pair, or undefined when meshpilot does not serve it. */
export function lookupKind(apiVersion: string, kindName: string): KindInfo | undefined {
  const info = kindForApiKind(kindName, splitApiVersion(apiVersion).group);
  if (!info) return undefined;
  const { group, version } = splitApiVersion(apiVersion);
  return group === info.group && info.versions.includes(version) ? info : undefined;
}

/** `group/version`, or just `version` for Kubernetes' core group (`v1`). */
export function splitApiVersion(apiVersion: string): { group: string; version: string } {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? { group: '', version: apiVersion } : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

/** The apiVersion to print for a kind (newest version). */
export function apiVersionOf(info: KindInfo): string {
  const v = info.versions[0] ?? 'v1';
  return info.group === '' ? v : `${info.group}/${v}`;
}
