/** Istio YAML documents as plain objects, for writeYaml. All use networking.istio.io/v1. */

export const API_VERSION = 'networking.istio.io/v1';

export interface IstioDoc {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; labels?: Record<string, string> };
  spec: Record<string, unknown>;
}

function doc(kind: string, name: string, namespace: string, spec: Record<string, unknown>): IstioDoc {
  return { apiVersion: API_VERSION, kind, metadata: { name, namespace }, spec };
}

export interface ServiceEntryOptions {
  host: string;
  namespace?: string;
  port?: number;
  portName?: string;
  protocol?: string;
  /** WorkloadEntry labels this service selects. */
  selector: Record<string, string>;
}

/** A mesh-internal STATIC ServiceEntry selecting WorkloadEntries by label. */
export function serviceEntry(name: string, o: ServiceEntryOptions): IstioDoc {
  return doc('ServiceEntry', name, o.namespace ?? 'default', {
    hosts: [o.host],
    location: 'MESH_INTERNAL',
    ports: [{ number: o.port ?? 8080, name: o.portName ?? 'grpc', protocol: o.protocol ?? 'GRPC' }],
    resolution: 'STATIC',
    workloadSelector: { labels: o.selector },
  });
}

export interface WorkloadEntryOptions {
  address?: string;
  namespace?: string;
  /** Backend port, mapped from the ServiceEntry port name. */
  port: number;
  portName?: string;
  labels: Record<string, string>;
}

export function workloadEntry(name: string, o: WorkloadEntryOptions): IstioDoc {
  return doc('WorkloadEntry', name, o.namespace ?? 'default', {
    address: o.address ?? '127.0.0.1',
    ports: { [o.portName ?? 'grpc']: o.port },
    labels: o.labels,
  });
}

/** A DestinationRule with one subset per entry of `subsets` (subset name → labels). */
export function destinationRule(
  name: string,
  o: { host: string; namespace?: string; subsets: Record<string, Record<string, string>>; trafficPolicy?: Record<string, unknown> },
): IstioDoc {
  return doc('DestinationRule', name, o.namespace ?? 'default', {
    host: o.host,
    ...(o.trafficPolicy ? { trafficPolicy: o.trafficPolicy } : {}),
    subsets: Object.entries(o.subsets).map(([n, labels]) => ({ name: n, labels })),
  });
}

export function virtualService(name: string, o: { hosts: string[]; namespace?: string; http: unknown[] }): IstioDoc {
  return doc('VirtualService', name, o.namespace ?? 'default', { hosts: o.hosts, http: o.http });
}

/** A route destination `{destination: {host, subset, port}, weight}`. */
export function dest(host: string, subset?: string, weight?: number, port = 8080): Record<string, unknown> {
  return {
    destination: { host, ...(subset !== undefined ? { subset } : {}), port: { number: port } },
    ...(weight !== undefined ? { weight } : {}),
  };
}
