import { Cluster_DiscoveryType, Cluster_LbPolicy, type Cluster } from '../../gen/envoy/config/cluster/v3/cluster_pb.js';
import type { Config } from '../../config/index.js';
import { type Proxy, type PushContext, type ServiceInstance, buildClusterName } from '../../model/index.js';
import { parseProtocol } from '../../registry/index.js';
import {
  altStatName,
  defaultThresholds,
  finishCluster,
  istioMetadata,
  serviceMetadata,
  type ClusterDraft,
} from '../cluster/cluster-draft.js';
import { setUpstreamProtocol } from '../cluster/connection-pool.js';
import { passthroughBindConfig } from '../cluster/fixed-clusters.js';
import { durationFromMs } from '../common.js';
import { portKind, socketAddress } from '../listener/listener-common.js';
import type { InboundProtocol } from '../policy/index.js';

/** Where an inbound port's traffic goes to the app. */
export type InboundTarget =
  | { readonly kind: 'original' }
  | { readonly kind: 'static'; readonly address: string; readonly port: number }
  | { readonly kind: 'original-port'; readonly port: number }
  | { readonly kind: 'pipe'; readonly path: string };

/** One inbound destination of the sidecar: a port traffic arrives on, how it speaks, where it goes. */
export interface InboundPort {
  readonly port: number;
  /**
   * Set (possibly '') for a Sidecar ingress listener: its bind address, which names its chains.
   * Unset for a port derived from service instances (chains named after the wildcard).
   */
  readonly bind?: string;
  readonly protocol: InboundProtocol;
  readonly target: InboundTarget;
  /** The tracing operation of its route (`<host>:<port>/*`: the service's, or the Sidecar's `<name>.<namespace>`). */
  readonly operation: string;
  /** gRPC gets no reset-before-request retry (it breaks streams). */
  readonly grpc: boolean;
  /** The service port it serves (names the inbound route's virtual host); the port itself for a Sidecar ingress. */
  readonly servicePort: number;
  /** The Sidecar a Sidecar ingress port comes from, as its chains name it in their metadata (istiod's config path). */
  readonly sidecarConfig?: string;
}

const isGrpc = (protocol: string): boolean => ['GRPC', 'GRPC-WEB'].includes(parseProtocol(protocol));

const kindOf = (protocol: string): InboundProtocol | undefined => {
  const k = portKind(parseProtocol(protocol));
  return k === 'udp' ? undefined : k === 'http' ? 'http' : k === 'auto' ? 'auto' : 'tcp';
};

/**
 * A Sidecar ingress listener's defaultEndpoint (validated: 127.0.0.1 / [::1] / 0.0.0.0 / [::]
 * with a port, unix://path, or unset). Loopback addresses send to the app there; a wildcard
 * address keeps the pod IP the peer dialled and changes only the port; unset keeps both.
 */
function targetOf(defaultEndpoint: string): InboundTarget {
  if (defaultEndpoint === '') return { kind: 'original' };
  if (defaultEndpoint.startsWith('unix://')) return { kind: 'pipe', path: defaultEndpoint.slice('unix://'.length) };
  const colon = defaultEndpoint.lastIndexOf(':');
  const host = defaultEndpoint.slice(0, colon).replace(/^\[|\]$/g, '');
  const port = Number(defaultEndpoint.slice(colon + 1));
  return host === '0.0.0.0' || host === '::' ? { kind: 'original-port', port } : { kind: 'static', address: host, port };
}

/**
 * The sidecar's inbound ports, as istiod takes them: the Sidecar's ingress listeners when it
 * declares any (they replace the service-derived ports), else the distinct workload ports of the
 * proxy's service instances (the first service port's protocol wins).
 */
export function inboundPorts(sidecar: Config<'Sidecar'> | undefined, instances: readonly ServiceInstance[]): InboundPort[] {
  const seen = new Map<number, InboundPort>();
  if (sidecar && sidecar.spec.ingress.length > 0) {
    for (const ing of sidecar.spec.ingress) {
      const number = ing.port?.number ?? 0;
      const protocol = kindOf(ing.port?.protocol ?? '');
      if (number === 0 || !protocol || seen.has(number)) continue; // UDS-bound ingress (port 0) is not captured by iptables
      seen.set(number, {
        port: number,
        protocol,
        target: targetOf(ing.defaultEndpoint),
        bind: ing.bind,
        operation: `${sidecar.meta.name}.${sidecar.meta.namespace}:${number}/*`,
        grpc: isGrpc(ing.port?.protocol ?? ''),
        servicePort: number,
        sidecarConfig: `/apis/networking.istio.io/v1/namespaces/${sidecar.meta.namespace}/sidecar/${sidecar.meta.name}`,
      });
    }
  } else {
    for (const i of instances) {
      const protocol = kindOf(i.servicePort.protocol);
      if (seen.has(i.endpoint.port) || !protocol) continue;
      seen.set(i.endpoint.port, {
        port: i.endpoint.port,
        protocol,
        target: { kind: 'original' },
        operation: `${i.service.hostname}:${i.servicePort.port}/*`,
        grpc: isGrpc(i.servicePort.protocol),
        servicePort: i.servicePort.port,
      });
    }
  }
  return [...seen.values()].sort((a, b) => a.port - b.port);
}

/**
 * `inbound|<port>||` for a Sidecar ingress listener: STATIC to a loopback or UDS defaultEndpoint,
 * else ORIGINAL_DST bound to the inbound passthrough source (with the port overridden for a
 * wildcard defaultEndpoint).
 */
export function buildIngressCluster(push: PushContext, proxy: Proxy, p: InboundPort, instances: readonly ServiceInstance[]): Cluster {
  const name = buildClusterName('inbound', p.port, '', '');
  const t = p.target;
  const d: ClusterDraft = {
    c: {
      name,
      commonLbConfig: {},
      altStatName: altStatName(name),
      connectTimeout: durationFromMs(push.mesh.connectTimeoutMs),
      circuitBreakers: { thresholds: [defaultThresholds()] },
    },
  };
  if (t.kind === 'static' || t.kind === 'pipe') {
    const address = t.kind === 'pipe' ? { address: { case: 'pipe' as const, value: { path: t.path } } } : socketAddress(t.address, t.port);
    d.c.clusterDiscoveryType = { case: 'type', value: Cluster_DiscoveryType.STATIC };
    d.c.loadAssignment = {
      clusterName: name,
      endpoints: [{ lbEndpoints: [{ hostIdentifier: { case: 'endpoint', value: { address } } }] }],
    };
  } else {
    d.c.clusterDiscoveryType = { case: 'type', value: Cluster_DiscoveryType.ORIGINAL_DST };
    d.c.lbPolicy = Cluster_LbPolicy.CLUSTER_PROVIDED;
    d.c.upstreamBindConfig = passthroughBindConfig(proxy);
    if (t.kind === 'original-port') d.c.lbConfig = { case: 'originalDstLbConfig', value: { upstreamPortOverride: t.port } };
  }
  setUpstreamProtocol(d, p.protocol === 'http' ? 'HTTP' : p.protocol === 'auto' ? 'UNSUPPORTED' : 'TCP', proxy.type);
  // Telemetry: the service whose workload port this is (istiod's findOrCreateService; none without one).
  const service = instances.find((i) => i.endpoint.port === p.port)?.service;
  if (service && !service.meshExternal) istioMetadata(d).services = [serviceMetadata(service)];
  return finishCluster(d);
}
