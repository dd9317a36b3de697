import { clone } from '@bufbuild/protobuf';
import { type Config, isHTTPProtocol, parseProtocol } from '../../config/index.js';
import { ServerSchema, ServerTLSSettings_TLSmode, type Server } from '../../gen/networking/v1alpha3/gateway_pb.js';
import type { ServiceInstance } from '../../model/index.js';

/** One Gateway server as merged for a proxy: hosts sanitised, its owner, the port it listens on. */
export interface GatewayServer {
  readonly server: Server;
  readonly gateway: Config<'Gateway'>;
  /** `ns/name` of the owning Gateway (what VirtualServices bind to). */
  readonly gatewayName: string;
  /** RDS name for HTTP and TLS-terminated HTTPS servers, else ''. */
  readonly routeName: string;
  /** SNI hosts of a TLS server (namespaces stripped, sorted, unique). */
  readonly sniHosts: readonly string[];
}

/** Servers sharing one (port, protocol, bind): istiod's MergedServers. */
export interface MergedServers {
  readonly port: number;
  readonly protocol: string;
  readonly bind: string;
  readonly servers: GatewayServer[];
  /** RDS name of plaintext HTTP servers on this port (`http.<port>`). */
  routeName: string;
}

/** Every Gateway of one proxy merged into one logical gateway (istiod's MergedGateway). */
export interface MergedGateway {
  /** In first-seen order; listeners are built in this order. */
  readonly ports: readonly MergedServers[];
  /** RDS name → the servers whose virtual hosts it carries. */
  readonly serversByRouteName: ReadonlyMap<string, readonly GatewayServer[]>;
}

const protocolOf = (s: Server): string => parseProtocol(s.port?.protocol ?? '') ?? (s.port?.protocol ?? '').toUpperCase();

export const isPassthrough = (s: Server): boolean =>
  s.tls?.mode === ServerTLSSettings_TLSmode.PASSTHROUGH || s.tls?.mode === ServerTLSSettings_TLSmode.AUTO_PASSTHROUGH;
/** A non-HTTP server with TLS settings (termination or passthrough); an HTTP redirect-only server is not. */
export const isTlsServer = (s: Server): boolean => s.tls !== undefined && !isHTTPProtocol(protocolOf(s));
export const isHttpsTerminated = (s: Server): boolean => s.tls !== undefined && protocolOf(s) === 'HTTPS' && !isPassthrough(s);
/** HTTP, or HTTPS that Envoy terminates: the servers with an RDS route. */
export const isHttpServer = (s: Server): boolean => isHTTPProtocol(protocolOf(s)) || isHttpsTerminated(s);
export const serverProtocol = protocolOf;

/** `./h` → `<ns>/h`, `*\/h` → `h`, `*\/*` → just `*` (istiod's sanitizeServerHostNamespace). */
function sanitizeHosts(server: Server, namespace: string): Server {
  if (!server.hosts.some((h) => h.includes('/'))) return server;
  const copy = clone(ServerSchema, server);
  const hosts: string[] = [];
  for (const h of server.hosts) {
    const [ns = '', host = ''] = h.split('/');
    if (!h.includes('/')) hosts.push(h);
    else if (ns === '.') hosts.push(`${namespace}/${host}`);
    else if (ns === '*') {
      if (host === '*') {
        copy.hosts = ['*'];
        return copy;
      }
      hosts.push(host);
    } else hosts.push(h);
  }
  copy.hosts = hosts;
  return copy;
}

/** Server hosts as SNI names: namespaces stripped, unique, sorted. */
function sniHostsOf(server: Server): string[] {
  if (!server.tls) return [];
  return [...new Set(server.hosts.map((h) => (h.includes('/') ? (h.split('/')[1] ?? '') : h)))].sort();
}

/** istiod's gatewayRDSRouteName: `http.<port>[.<bind>]`, `https.<port>.<portName>.<gw>.<ns>[.<bind>]`, or ''. */
export function gatewayRouteName(server: Server, port: number, gateway: Config<'Gateway'>): string {
  const bind = server.bind !== '' ? `.${server.bind}` : '';
  if (isHTTPProtocol(protocolOf(server))) return `http.${port}${bind}`;
  if (isHttpsTerminated(server)) {
    return `https.${server.port?.number ?? port}.${server.port?.name ?? ''}.${gateway.meta.name}.${gateway.meta.namespace}${bind}`;
  }
  return '';
}

/**
 * The port a server listens on: a gateway Service port the proxy's workload serves maps to its
 * target port (Service 80 → pod 8080), as istiod's resolvePorts does for selector-based Gateways;
 * otherwise the port as written.
 */
function resolvePort(number: number, instances: readonly ServiceInstance[]): number {
  return instances.find((i) => i.servicePort.port === number)?.endpoint.port ?? number;
}

function appendTo<V>(map: Map<string, V[]>, key: string, v: V): void {
  const list = map.get(key);
  if (list) list.push(v);
  else map.set(key, [v]);
}

const canMergeProtocols = (current: string, p: string): boolean => (isHTTPProtocol(current) || current === p) && isHTTPProtocol(p);

/**
 * Merges a proxy's Gateways as istiod's mergeGateways does: plaintext HTTP servers on one port
 * share one RDS (`http.<port>`); TLS servers on one port each keep their own filter chain (SNI),
 * HTTPS ones their own RDS; a server whose TLS hosts repeat an earlier one on the port, or whose
 * protocol conflicts with the port's plaintext server, is skipped (istiod counts it in
 * pilot_total_rejected_configs).
 */
export function mergeGateways(gateways: readonly Config<'Gateway'>[], instances: readonly ServiceInstance[]): MergedGateway {
  const seenPorts = new Set<number>();
  const plainText = new Map<number, MergedServers>();
  const merged = new Map<string, MergedServers>();
  const ports: MergedServers[] = [];
  const byRoute = new Map<string, GatewayServer[]>();
  const tlsHostsByPort = new Map<number, Map<string, string>>();
  const key = (port: number, protocol: string, bind: string): string => `${port}|${protocol}|${bind}`;
  const addEntry = (entry: MergedServers): void => {
    merged.set(key(entry.port, entry.protocol, entry.bind), entry);
    ports.push(entry);
  };

  for (const gateway of gateways) {
    const gatewayName = `${gateway.meta.namespace}/${gateway.meta.name}`;
    for (const raw of gateway.spec.servers) {
      if (!raw.port) continue;
      const server = sanitizeHosts(raw, gateway.meta.namespace);
      const port = resolvePort(raw.port.number, instances);
      const routeName = gatewayRouteName(server, port, gateway);
      const protocol = protocolOf(server);
      if (server.tls) {
        const known = tlsHostsByPort.get(port) ?? new Map<string, string>();
        tlsHostsByPort.set(port, known);
        if (server.hosts.some((h) => known.get(h) === server.bind)) continue;
        for (const h of server.hosts) known.set(h, server.bind);
      }
      const gs: GatewayServer = { server, gateway, gatewayName, routeName, sniHosts: sniHostsOf(server) };
      const entryKey = key(port, protocol, server.bind);

      if (!seenPorts.has(port)) {
        seenPorts.add(port);
        const entry: MergedServers = { port, protocol, bind: server.bind, servers: [gs], routeName };
        if (!isTlsServer(server)) plainText.set(port, entry);
        if (isHttpServer(server)) byRoute.set(routeName, [gs]);
        addEntry(entry);
        continue;
      }
      const current = plainText.get(port);
      if (current) {
        const sameBind = current.bind === server.bind;
        if (sameBind && (!canMergeProtocols(protocol, current.protocol) || routeName === '')) continue;
        if (sameBind) {
          current.servers.push(gs);
          appendTo(byRoute, routeName, gs);
          continue;
        }
        const other = merged.get(entryKey);
        if (other) {
          other.routeName = routeName;
          other.servers.push(gs);
          appendTo(byRoute, routeName, gs);
        } else {
          const entry: MergedServers = { port, protocol, bind: server.bind, servers: [gs], routeName };
          if (!isTlsServer(server)) plainText.set(port, entry);
          if (isHttpServer(server)) byRoute.set(routeName, [gs]);
          addEntry(entry);
        }
        continue;
      }
      if (!isTlsServer(server)) {
        const entry: MergedServers = { port, protocol, bind: server.bind, servers: [gs], routeName };
        plainText.set(port, entry);
        if (isHttpServer(server)) byRoute.set(routeName, [gs]);
        addEntry(entry);
        continue;
      }
      if (isHttpServer(server)) {
        // Each HTTPS server needs its own RDS, so its route name must be new.
        if (routeName === '' || byRoute.has(routeName)) continue;
        byRoute.set(routeName, [gs]);
      }
      const existing = merged.get(entryKey);
      if (existing) existing.servers.push(gs);
      else addEntry({ port, protocol, bind: server.bind, servers: [gs], routeName: '' });
    }
  }
  return { ports, serversByRouteName: byRoute };
}
