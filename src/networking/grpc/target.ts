import { parseClusterName, type PushContext, type Proxy } from '../../model/index.js';
import type { Service } from '../../registry/index.js';

/** A proxyless client's dial target `host:port` (the LDS and RDS resource name), resolved. */
export interface GrpcTarget {
  readonly name: string;
  readonly service: Service;
  readonly port: number;
}

/** Resolves `host:port` to a visible service port; undefined when either is unknown. */
export function resolveTarget(name: string, push: PushContext, proxy: Proxy): GrpcTarget | undefined {
  const colon = name.lastIndexOf(':');
  if (colon <= 0) return undefined;
  const host = name.slice(0, colon).toLowerCase();
  const port = Number(name.slice(colon + 1));
  if (!Number.isInteger(port) || port < 1 || port > 65535) return undefined;
  const service = push.service(host, proxy.namespace);
  if (!service || !service.ports.some((p) => p.port === port)) return undefined;
  return { name, service, port };
}

/** Resolves an RDS name `outbound|<port>||<host>` (istiod's route name for a proxyless target). */
export function resolveRouteName(name: string, push: PushContext, proxy: Proxy): GrpcTarget | undefined {
  const c = parseClusterName(name);
  if (!c || c.direction !== 'outbound' || c.subset !== '') return undefined;
  const service = push.service(c.host, proxy.namespace);
  if (!service || !service.ports.some((p) => p.port === c.port)) return undefined;
  return { name, service, port: c.port };
}
