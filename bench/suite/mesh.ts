/**
 * The mesh a suite scenario runs on: S services over NS namespaces, each a ServiceEntry selecting
 * its WorkloadEntries (one file per service for the entry and its policies, one for its
 * workloads), optional namespace Sidecars, and the simulated proxies that live in it: sidecars
 * on WorkloadEntry addresses (so they get inbound config), proxyless clients, gateway routers.
 */
import type { IstioDoc } from '../../test/support/mesh-fixtures.js';
import type { ProxyPlan } from '../load-gen/protocol.js';

export interface PortSpec {
  readonly number: number;
  readonly name: string;
  /** Omitted: protocol sniffing ("auto"). */
  readonly protocol?: string;
}

export interface MeshSize {
  readonly services: number;
  readonly namespaces: number;
  /** WorkloadEntries per service (the churn target gets at least `restart` + 2). */
  readonly instances: number;
  readonly sidecars: number;
  readonly proxyless: number;
  readonly routers: number;
  /** Workloads of the target service the rolling restart replaces. */
  readonly restart: number;
  /** A Sidecar per namespace importing only `./*` and `istio-system/*` (Istio's advice at scale). */
  readonly sidecarScope: boolean;
}

export interface Service {
  readonly index: number;
  readonly name: string;
  readonly ns: string;
  readonly host: string;
  /** Virtual IP (ServiceEntry addresses), for scenarios that give one. */
  readonly vip: string;
  readonly instances: number;
  /** Global index of the service's first WorkloadEntry (addresses are unique across the mesh). */
  readonly firstWorkload: number;
}

/** The kinds of the bench's config, apiVersion by group. */
export function istioDoc(kind: string, name: string, namespace: string, spec: Record<string, unknown>): IstioDoc {
  const group = ['PeerAuthentication', 'AuthorizationPolicy', 'RequestAuthentication'].includes(kind)
    ? 'security.istio.io'
    : 'networking.istio.io';
  return { apiVersion: `${group}/v1`, kind, metadata: { name, namespace }, spec };
}

/**
 * IPv4 of workload `n` of generation `gen` (0: initial, 1: after the rolling restart). The last
 * octet has three digits, so no address is a prefix of another: a byte search for one is exact.
 */
export function workloadAddress(n: number, gen = 0): string {
  return `10.${(gen === 0 ? 64 : 128) + Math.floor(n / 25_600)}.${Math.floor(n / 100) % 256}.${100 + (n % 100)}`;
}

const nodeAddress = (block: number, n: number): string => `10.${block}.${Math.floor(n / 100) % 256}.${100 + (n % 100)}`;

export class Mesh {
  readonly services: Service[] = [];
  readonly namespaces: string[];

  constructor(
    readonly size: MeshSize,
    readonly ports: readonly PortSpec[],
  ) {
    this.namespaces = Array.from({ length: Math.min(size.namespaces, size.services) }, (_, i) => `ns-${i}`);
    let next = 0;
    for (let i = 0; i < size.services; i++) {
      const ns = this.namespaces[i % this.namespaces.length] ?? 'ns-0';
      const name = `svc-${i}`;
      const instances = i === 0 ? Math.max(size.instances, size.restart + 2) : size.instances;
      this.services.push({
        index: i,
        name,
        ns,
        host: `${name}.${ns}.svc.cluster.local`,
        vip: `240.${240 + Math.floor(i / 65_536)}.${Math.floor(i / 256) % 256}.${i % 256}`,
        instances,
        firstWorkload: next,
      });
      next += instances;
    }
  }

  /** The service every churn step changes (svc-0 in ns-0). */
  get target(): Service {
    const t = this.services[0];
    if (!t) throw new Error('the mesh has no services');
    return t;
  }

  /** Instances of the target that the rolling restart replaces: the last `restart` ones. */
  restartedInstances(): number[] {
    const t = this.target;
    return Array.from({ length: Math.min(this.size.restart, t.instances) }, (_, k) => t.instances - 1 - k).reverse();
  }

  /** A workload's labels as an injected pod has them (the webhook adds the canonical service and revision). */
  workloadLabels(svc: Service, k: number): Record<string, string> {
    const version = k % 2 === 0 ? 'v1' : 'v2';
    return { app: svc.name, version, 'service.istio.io/canonical-name': svc.name, 'service.istio.io/canonical-revision': version };
  }

  /** The WorkloadEntries of a service; `generation(k)` picks an instance's address generation. */
  workloadEntries(svc: Service, generation: (k: number) => number = () => 0): IstioDoc[] {
    return Array.from({ length: svc.instances }, (_, k) =>
      istioDoc('WorkloadEntry', `${svc.name}-${k}`, svc.ns, {
        address: workloadAddress(svc.firstWorkload + k, generation(k)),
        labels: { ...this.workloadLabels(svc, k), 'security.istio.io/tlsMode': 'istio' },
        serviceAccount: svc.name,
      }),
    );
  }

  /** A WorkloadEntry the "endpoint added" step adds to the target (and then removes). */
  extraEndpoint(): { doc: IstioDoc; address: string } {
    const t = this.target;
    const address = nodeAddress(250, 0);
    const doc = istioDoc('WorkloadEntry', `${t.name}-extra`, t.ns, {
      address,
      labels: { ...this.workloadLabels(t, 0), 'security.istio.io/tlsMode': 'istio' },
      serviceAccount: t.name,
    });
    return { doc, address };
  }

  serviceEntry(svc: Service, o: { vip: boolean }): IstioDoc {
    return istioDoc('ServiceEntry', svc.name, svc.ns, {
      hosts: [svc.host],
      ...(o.vip ? { addresses: [svc.vip] } : {}),
      location: 'MESH_INTERNAL',
      resolution: 'STATIC',
      ports: this.ports.map((p) => ({ number: p.number, name: p.name, ...(p.protocol !== undefined ? { protocol: p.protocol } : {}) })),
      workloadSelector: { labels: { app: svc.name } },
    });
  }

  static file(svc: Service, part: 'service' | 'workloads' | 'routes' | 'extra'): string {
    return part === 'service' ? `${svc.ns}/${svc.name}.yaml` : `${svc.ns}/${svc.name}-${part}.yaml`;
  }

  static peerAuthnFile(ns: string): string {
    return `${ns}/peer-authentication.yaml`;
  }

  peerAuthentication(ns: string, mode: 'PERMISSIVE' | 'STRICT'): IstioDoc {
    return istioDoc('PeerAuthentication', 'default', ns, { mtls: { mode } });
  }

  /** Workloads, namespace Sidecars and the target namespace's PeerAuthentication (PERMISSIVE). */
  baseFiles(): Map<string, IstioDoc[]> {
    const files = new Map<string, IstioDoc[]>();
    for (const svc of this.services) files.set(Mesh.file(svc, 'workloads'), this.workloadEntries(svc));
    if (this.size.sidecarScope) {
      for (const ns of this.namespaces)
        files.set(`${ns}/sidecar.yaml`, [istioDoc('Sidecar', 'default', ns, { egress: [{ hosts: ['./*', 'istio-system/*'] }] })]);
    }
    files.set(Mesh.peerAuthnFile(this.target.ns), [this.peerAuthentication(this.target.ns, 'PERMISSIVE')]);
    return files;
  }

  /**
   * Sidecar j fronts a workload of service j mod S (so sidecars spread over services and
   * namespaces), with that WorkloadEntry's address and labels; never one the restart replaces.
   */
  sidecarPlans(): ProxyPlan[] {
    const S = this.services.length;
    const restarted = new Set(this.restartedInstances());
    const out: ProxyPlan[] = [];
    for (let j = 0; j < this.size.sidecars; j++) {
      const svc = this.services[j % S];
      if (!svc) break;
      let k = Math.floor(j / S) % svc.instances;
      if (svc.index === 0 && restarted.has(k)) k %= Math.max(1, svc.instances - restarted.size);
      out.push({
        kind: 'sidecar',
        pod: `${svc.name}-${j}`,
        namespace: svc.ns,
        ip: workloadAddress(svc.firstWorkload + k),
        labels: this.workloadLabels(svc, k),
      });
    }
    return out;
  }

  /**
   * Proxyless client c asks for up to 5 listeners `host:port`; every other one includes the
   * target's. With Sidecar scoping a client only asks for what its namespace can see.
   */
  proxylessPlans(port: number): ProxyPlan[] {
    const out: ProxyPlan[] = [];
    const NS = this.namespaces.length;
    for (let c = 0; c < this.size.proxyless; c++) {
      const watchesTarget = c % 2 === 0;
      const ns = this.size.sidecarScope && watchesTarget ? this.target.ns : (this.namespaces[c % NS] ?? 'ns-0');
      const candidates = this.services.filter((s) => s.index !== 0 && (!this.size.sidecarScope || s.ns === ns));
      const listeners = new Set<string>();
      if (watchesTarget || candidates.length === 0) listeners.add(`${this.target.host}:${port}`);
      const K = Math.min(5, candidates.length + listeners.size);
      for (let j = 0; listeners.size < K; j++) {
        const s = candidates[(c * 5 + j) % candidates.length];
        if (s) listeners.add(`${s.host}:${port}`);
      }
      out.push({
        kind: 'proxyless',
        pod: `grpc-client-${c}`,
        namespace: ns,
        ip: nodeAddress(252, c),
        labels: { app: 'grpc-client' },
        listeners: [...listeners],
      });
    }
    return out;
  }

  routerPlans(labels: Readonly<Record<string, string>>): ProxyPlan[] {
    return Array.from({ length: this.size.routers }, (_, r) => ({
      kind: 'router' as const,
      pod: `istio-ingressgateway-${r}`,
      namespace: 'istio-system',
      ip: nodeAddress(251, r),
      labels,
    }));
  }
}
