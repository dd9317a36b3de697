import type { GenMessage } from '@bufbuild/protobuf/codegenv2';
import { DestinationRuleSchema, type DestinationRule } from '../gen/networking/v1alpha3/destination_rule_pb.js';
import { GatewaySchema, type Gateway } from '../gen/networking/v1alpha3/gateway_pb.js';
import { ServiceEntrySchema, type ServiceEntry } from '../gen/networking/v1alpha3/service_entry_pb.js';
import { SidecarSchema, type Sidecar } from '../gen/networking/v1alpha3/sidecar_pb.js';
import { VirtualServiceSchema, type VirtualService } from '../gen/networking/v1alpha3/virtual_service_pb.js';
import { WorkloadEntrySchema, type WorkloadEntry } from '../gen/networking/v1alpha3/workload_entry_pb.js';

/** The spec message of each supported kind (generated from istio/api). */
export interface SpecByKind {
  ServiceEntry: ServiceEntry;
  WorkloadEntry: WorkloadEntry;
  VirtualService: VirtualService;
  DestinationRule: DestinationRule;
  Gateway: Gateway;
  Sidecar: Sidecar;
}

export type KindName = keyof SpecByKind;

export interface KindInfo<K extends KindName = KindName> {
  readonly kind: K;
  readonly group: string;
  /** Accepted apiVersion versions, newest first; all map onto the same spec message. */
  readonly versions: readonly string[];
  readonly plural: string;
  readonly schema: GenMessage<SpecByKind[K]>;
}

const NETWORKING = 'networking.istio.io';
const NETWORKING_VERSIONS = ['v1', 'v1beta1', 'v1alpha3'] as const;

function kind<K extends KindName>(k: K, plural: string, schema: GenMessage<SpecByKind[K]>): KindInfo<K> {
  return { kind: k, group: NETWORKING, versions: NETWORKING_VERSIONS, plural, schema };
}

export const KINDS: { readonly [K in KindName]: KindInfo<K> } = {
  ServiceEntry: kind('ServiceEntry', 'serviceentries', ServiceEntrySchema),
  WorkloadEntry: kind('WorkloadEntry', 'workloadentries', WorkloadEntrySchema),
  VirtualService: kind('VirtualService', 'virtualservices', VirtualServiceSchema),
  DestinationRule: kind('DestinationRule', 'destinationrules', DestinationRuleSchema),
  Gateway: kind('Gateway', 'gateways', GatewaySchema),
  Sidecar: kind('Sidecar', 'sidecars', SidecarSchema),
};

export const KIND_NAMES = Object.keys(KINDS) as KindName[];

/** Finds the kind for an `apiVersion` + `kind` pair, or undefined when meshpilot does not serve it. */
export function lookupKind(apiVersion: string, kindName: string): KindInfo | undefined {
  const info = (KINDS as Record<string, KindInfo | undefined>)[kindName];
  if (!info) return undefined;
  const [group, version] = apiVersion.split('/');
  return group === info.group && version !== undefined && info.versions.includes(version) ? info : undefined;
}
