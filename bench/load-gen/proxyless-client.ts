/**
 * A simulated proxyless gRPC client: subscribes LDS for its listeners (`host:port`), then follows
 * the names in the responses as grpc-js does — LDS → RDS (the api_listener's route config) → CDS
 * (the clusters the routes use) → EDS (the clusters' EDS service names).
 */
import { fromBinary } from '@bufbuild/protobuf';
import { ListenerSchema } from '../../src/gen/envoy/config/listener/v3/listener_pb.js';
import { RouteConfigurationSchema } from '../../src/gen/envoy/config/route/v3/route_pb.js';
import { proxylessAdsNode, type AdsNode } from '../../test/support/raw-ads-client.js';
import { listenerRouteName, routeClusters, TYPE } from '../../test/support/xds-resources.js';
import { clusterEdsServiceName } from './resource-wire.js';
import { SimulatedClient, type ClientHooks } from './simulated-client.js';
import type { ProxyPlan } from './protocol.js';

export class ProxylessClient extends SimulatedClient {
  constructor(addr: string, plan: ProxyPlan, hooks: ClientHooks) {
    super(addr, plan, hooks);
    this.setNames(TYPE.LDS, plan.listeners ?? []);
  }

  protected node(): AdsNode {
    const p = this.plan;
    const n = proxylessAdsNode(p.pod, p.namespace, p.ip);
    return { ...n, metadata: { ...n.metadata, ...(p.labels ? { LABELS: { ...p.labels } } : {}) } };
  }

  protected follow(typeUrl: string): void {
    if (typeUrl === TYPE.EDS) return;
    const routes = [...this.held.of(TYPE.LDS).values()].flatMap(
      (l) => l.memo('apiRoute', (b) => listenerRouteName(fromBinary(ListenerSchema, b))) ?? [],
    );
    this.setNames(TYPE.RDS, routes);
    const rds = this.held.of(TYPE.RDS);
    const clusters = routes.flatMap(
      (n) => rds.get(n)?.memo('routeClusters', (b) => routeClusters(fromBinary(RouteConfigurationSchema, b))) ?? [],
    );
    this.setNames(TYPE.CDS, clusters);
    const cds = this.held.of(TYPE.CDS);
    this.setNames(
      TYPE.EDS,
      clusters.flatMap((n) => cds.get(n)?.memo('eds', clusterEdsServiceName) ?? []),
    );
  }
}
