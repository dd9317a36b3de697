/**
 * What an auto-registered WorkloadEntry is: its name from the group and the proxy's address, its
 * spec from the WorkloadGroup's template and the proxy's node (istiod's
 * autoregisteredWorkloadEntryName and workloadEntryFromGroup).
 */
import { toJson, type JsonObject } from '@bufbuild/protobuf';
import type { Config } from '../config/index.js';
import { AUTO_REGISTRATION_GROUP_ANNOTATION, HEALTH_CHECKS_ENABLED_ANNOTATION } from '../config/constants.js';
import { WorkloadEntrySchema } from '../gen/networking/v1alpha3/workload_entry_pb.js';
import type { Proxy } from '../model/index.js';
import type { EntryObject } from './entry-store.js';

/** The node metadata auto-registration reads, as pilot-agent sends it (ISTIO_META_*). */
export interface RegistrationMetadata {
  readonly group: string;
  readonly network: string;
  /** WORKLOAD_ENTRY: the existing (not auto-registered) entry a health-checked proxy stands for. */
  readonly workloadEntry: string;
  /** The proxy's ProxyConfig has a readinessProbe: its entry gets health checks. */
  readonly readinessProbe: boolean;
  readonly hbone: boolean;
}

const text = (v: unknown): string => (typeof v === 'string' ? v : '');

export function registrationMetadata(proxy: Proxy): RegistrationMetadata {
  const raw = proxy.metadata.raw;
  const pc = raw.PROXY_CONFIG;
  const probe = pc !== null && typeof pc === 'object' && !Array.isArray(pc) ? pc.readinessProbe : undefined;
  return {
    group: text(raw.AUTO_REGISTER_GROUP),
    network: text(raw.NETWORK),
    workloadEntry: text(raw.WORKLOAD_ENTRY),
    readinessProbe: probe !== undefined && probe !== null,
    hbone: text(raw.ENABLE_HBONE).toLowerCase() === 'true',
  };
}

/** Kubernetes' longest object name. */
const MAX_NAME = 253;

/** `<group>-<ip>[-<network>]`, IPv6 colons as dashes; a name over 253 characters keeps its end. Undefined without an address. */
export function autoRegisteredEntryName(proxy: Proxy, md: RegistrationMetadata): string | undefined {
  const ip = proxy.ipAddresses[0];
  if (md.group === '' || ip === undefined) return undefined;
  const name = [md.group, ip.replaceAll(':', '-'), ...(md.network !== '' ? [md.network] : [])].join('-');
  return name.length > MAX_NAME ? name.slice(name.length - MAX_NAME) : name;
}

/** The label pilot-agent puts the locality in (`region/zone/subzone`), which is no valid label value. */
const LOCALITY_LABEL = 'istio-locality';
const TUNNEL_LABEL = 'networking.istio.io/tunnel';

function localityText(l: Proxy['locality']): string {
  const parts = [l.region, l.zone, l.subzone];
  while (parts.length > 0 && parts[parts.length - 1] === '') parts.pop();
  return parts.join('/');
}

/**
 * The entry for `proxy` from `group`: the template, its address the proxy's first IP; labels from
 * the template, then the group's metadata, then the node's (node wins); the group's metadata
 * annotations and `istio.io/autoRegistrationGroup`; network and locality from the node; health
 * checks on when the proxy runs a readiness probe.
 */
export function entryFromGroup(name: string, proxy: Proxy, md: RegistrationMetadata, group: Config<'WorkloadGroup'>): EntryObject {
  const spec = group.spec;
  const template: JsonObject = spec.template ? (toJson(WorkloadEntrySchema, spec.template) as JsonObject) : {};
  const labels: Record<string, string> = { ...spec.template?.labels, ...spec.metadata?.labels, ...proxy.metadata.labels };
  delete labels[LOCALITY_LABEL];
  if (md.hbone && labels[TUNNEL_LABEL] === undefined) labels[TUNNEL_LABEL] = 'http';
  const annotations: Record<string, string> = {
    [AUTO_REGISTRATION_GROUP_ANNOTATION]: group.meta.name,
    ...spec.metadata?.annotations,
  };
  if (md.readinessProbe) annotations[HEALTH_CHECKS_ENABLED_ANNOTATION] = 'true';
  const locality = localityText(proxy.locality);
  const entrySpec: JsonObject = {
    ...template,
    address: proxy.ipAddresses[0] ?? '',
    ...(Object.keys(labels).length > 0 ? { labels } : {}),
    ...(md.network !== '' ? { network: md.network } : {}),
    ...(locality !== '' ? { locality } : {}),
  };
  return {
    namespace: proxy.namespace,
    name,
    labels,
    annotations,
    spec: entrySpec,
    conditions: [],
    owner: { name: group.meta.name, ...(group.meta.uid !== undefined ? { uid: group.meta.uid } : {}) },
  };
}
