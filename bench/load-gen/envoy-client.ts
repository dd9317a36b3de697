/**
 * A simulated Envoy (sidecar or router) as Istio's proxy subscribes: CDS and LDS wildcard, then EDS
 * for every EDS cluster (eds_cluster_config.service_name, else the cluster name) and RDS for every
 * `rds.route_config_name` in the HttpConnectionManagers of the listeners' filter chains (and
 * default filter chains); re-subscribes whenever LDS or CDS change those name sets.
 */
import { fromBinary } from '@bufbuild/protobuf';
import { ListenerSchema } from '../../src/gen/envoy/config/listener/v3/listener_pb.js';
import type { AdsNode } from '../../test/support/raw-ads-client.js';
import { rdsNames } from '../../test/support/scenario.js';
import { TYPE } from '../../test/support/xds-resources.js';
import { clusterEdsServiceName } from './resource-wire.js';
import { SimulatedClient, type ClientHooks } from './simulated-client.js';
import type { ProxyPlan } from './protocol.js';

export class EnvoyClient extends SimulatedClient {
  constructor(addr: string, plan: ProxyPlan, hooks: ClientHooks) {
    super(addr, plan, hooks);
    this.subscribeWildcard(TYPE.CDS);
    this.subscribeWildcard(TYPE.LDS);
  }

  /** Node metadata as Istio's agent sends it for a sidecar / gateway (no GENERATOR: Envoy). */
  protected node(): AdsNode {
    const p = this.plan;
    const type = p.kind === 'router' ? 'router' : 'sidecar';
    const labels = { ...(p.labels ?? {}) };
    return {
      id: `${type}~${p.ip}~${p.pod}.${p.namespace}~${p.namespace}.svc.cluster.local`,
      cluster: `${labels.app ?? p.pod}.${p.namespace}`,
      metadata: {
        NAMESPACE: p.namespace,
        LABELS: labels,
        INSTANCE_IPS: p.ip,
        CLUSTER_ID: 'Kubernetes',
        ISTIO_VERSION: '1.28.0',
        MESH_ID: 'cluster.local',
        WORKLOAD_NAME: labels.app ?? p.pod,
        ...(type === 'sidecar' ? { INTERCEPTION_MODE: 'REDIRECT' } : {}),
      },
    };
  }

  protected follow(typeUrl: string): void {
    if (typeUrl === TYPE.LDS) {
      const routes: string[] = [];
      for (const l of this.held.of(TYPE.LDS).values())
        routes.push(...l.memo('rdsNames', (b) => [...rdsNames([fromBinary(ListenerSchema, b)])]));
      this.setNames(TYPE.RDS, routes);
    }
    if (typeUrl !== TYPE.CDS) return;
    const eds: string[] = [];
    for (const c of this.held.of(TYPE.CDS).values()) {
      const n = c.memo('eds', clusterEdsServiceName);
      if (n !== undefined) eds.push(n);
    }
    this.setNames(TYPE.EDS, eds);
  }
}
