/**
 * The xDS node the agent announces for its workload, built as Istio's pilot-agent builds it:
 * id `<type>~<ip>~<pod>.<ns>~<ns>.svc.<domain>`, metadata from the pod's facts plus every
 * ISTIO_META_<KEY> (string) and ISTIO_METAJSON_<KEY> (JSON) variable.
 */
import { networkInterfaces } from 'node:os';
import { spiffeId } from '../security/spiffe.js';
import { MeshError } from '../util/errors.js';
import type { AgentOptions } from './options.js';

/** What the node id and metadata are made of: the agent's workload options. */
export type NodeFacts = Pick<
  AgentOptions,
  | 'mode'
  | 'proxyType'
  | 'podName'
  | 'namespace'
  | 'podIp'
  | 'serviceAccount'
  | 'labels'
  | 'trustDomain'
  | 'domain'
  | 'clusterId'
  | 'istiodSAN'
  | 'extraMetadata'
> & { readonly envoy?: Pick<AgentOptions['envoy'], 'envoyStatusPort' | 'prometheusPort'> };

export interface AgentNode {
  readonly id: string;
  /** Envoy's service cluster (`<workload>.<namespace>`, as Istio's bootstrap sets node.cluster). */
  readonly cluster: string;
  readonly metadata: Record<string, unknown>;
  /** The workload's SPIFFE identity (what the CA is expected to issue; a hint in the CSR). */
  readonly identity: string;
}

const META = 'ISTIO_META_';
const META_JSON = 'ISTIO_METAJSON_';

/** ISTIO_META_* / ISTIO_METAJSON_* → metadata keys without the prefix; bad JSON is an error naming the variable. */
export function nodeMetadataFromEnv(env: NodeJS.ProcessEnv): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) continue;
    if (k.startsWith(META_JSON)) {
      try {
        out[k.slice(META_JSON.length)] = JSON.parse(v);
      } catch (err) {
        throw new MeshError('INVALID_ARGUMENT', `${k}: not JSON (${(err as Error).message})`);
      }
    } else if (k.startsWith(META) && k.length > META.length) {
      out[k.slice(META.length)] = v;
    }
  }
  return out;
}

/** The first non-loopback IPv4 address of this host, else 127.0.0.1 (INSTANCE_IP's stand-in off Kubernetes). */
export function defaultPodIp(): string {
  for (const addrs of Object.values(networkInterfaces())) {
    for (const a of addrs ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return '127.0.0.1';
}

export function buildNode(f: NodeFacts): AgentNode {
  const workloadName = typeof f.extraMetadata.WORKLOAD_NAME === 'string' ? f.extraMetadata.WORKLOAD_NAME : (f.labels.app ?? f.podName);
  const metadata: Record<string, unknown> = {
    MESH_ID: f.trustDomain,
    WORKLOAD_NAME: workloadName,
    PILOT_SAN: [f.istiodSAN],
    ...(f.mode === 'envoy'
      ? { ENVOY_STATUS_PORT: f.envoy?.envoyStatusPort ?? 15021, ENVOY_PROMETHEUS_PORT: f.envoy?.prometheusPort ?? 15090 }
      : {}),
    ...f.extraMetadata,
    // What the control plane keys config on comes from the pod's facts, not from stray env.
    NAME: f.podName,
    NAMESPACE: f.namespace,
    INSTANCE_IPS: f.podIp,
    SERVICE_ACCOUNT: f.serviceAccount,
    LABELS: { ...f.labels },
    CLUSTER_ID: f.clusterId,
    ...(f.mode === 'grpc' ? { GENERATOR: 'grpc' } : {}),
  };
  return {
    id: `${f.proxyType}~${f.podIp}~${f.podName}.${f.namespace}~${f.namespace}.svc.${f.domain}`,
    cluster: `${workloadName}.${f.namespace}`,
    metadata,
    identity: spiffeId(f.trustDomain, f.namespace, f.serviceAccount),
  };
}
