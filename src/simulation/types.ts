import type { Cluster } from '../gen/envoy/config/cluster/v3/cluster_pb.js';
import type { ClusterLoadAssignment } from '../gen/envoy/config/endpoint/v3/endpoint_pb.js';
import type { Listener } from '../gen/envoy/config/listener/v3/listener_pb.js';
import type { RouteConfiguration } from '../gen/envoy/config/route/v3/route_pb.js';

/** What one proxy received, decoded (structurally the GeneratedConfig of the test scenarios). */
export interface SimulationConfig {
  readonly listeners: readonly Listener[];
  readonly routes: readonly RouteConfiguration[];
  readonly clusters: readonly Cluster[];
  readonly endpoints: readonly ClusterLoadAssignment[];
}

/** One connection (and, for HTTP, one request) as the application or a peer makes it. */
export interface SimRequest {
  /** Destination IP the caller connects to (the original destination for captured traffic). */
  readonly address: string;
  readonly port: number;
  /** What the caller speaks inside any TLS: HTTP/1.1, HTTP/2 (h2c when plaintext) or opaque TCP. */
  readonly protocol: 'http' | 'http2' | 'tcp';
  /**
   * What arrives on the wire: `mtls` is Istio mTLS from a peer sidecar (client certificate, ALPN
   * `istio-http/1.1` / `istio-h2` for HTTP, `istio-peer-exchange`,`istio` for TCP unless `alpn`
   * is given); `tls` is the application's own TLS (ALPN http/1.1 or h2 for HTTP).
   */
  readonly tls?: 'none' | 'mtls' | 'tls';
  /** TLS SNI; for `tls` it defaults to the authority's host, as a client library would send. */
  readonly sni?: string;
  readonly alpn?: readonly string[];
  readonly authority?: string;
  /** `:path`, query string included. Default `/`. */
  readonly path?: string;
  readonly method?: string;
  readonly headers?: Readonly<Record<string, string>>;
  /** SPIFFE identity of the mTLS peer's certificate (RBAC `authenticated`). */
  readonly callerPrincipal?: string;
  readonly callerIp?: string;
  readonly callerPort?: number;
  /** An already verified JWT payload; undefined when the request carries no token. */
  readonly jwtClaims?: Readonly<Record<string, unknown>>;
  /**
   * outbound: app → iptables → 15001 (use_original_dst hand-off); inbound: peer → iptables →
   * 15006; gateway: no iptables, the listener bound on `listenerPort` (or `port`). Default:
   * gateway when `listenerPort` is set, else outbound.
   */
  readonly callMode?: 'outbound' | 'inbound' | 'gateway';
  readonly listenerPort?: number;
}

export interface SimRedirect {
  readonly status: number;
  readonly location: string;
}

export interface SimResult {
  listener?: string;
  filterChain?: string;
  /** RDS name, when the HCM uses RDS. */
  routeConfig?: string;
  virtualHost?: string;
  route?: string;
  /** The cluster the request goes to; for weighted clusters, the heaviest (first on ties). */
  cluster?: string;
  weights?: { cluster: string; weight: number }[];
  /** `ip:port` (`[ip6]:port`) of the first healthy endpoint, lowest priority first. */
  endpoint?: string;
  redirect?: SimRedirect;
  directResponse?: { status: number };
  /** Path and Host as the router rewrites them before forwarding. */
  rewrite?: { path?: string; host?: string };
  /** A fault filter abort configured for this request (applied only when `percent` is 100). */
  faultAbort?: { status: number; percent: number };
  rbac?: 'allow' | 'deny' | 'none';
  /** The RBAC policy that decided: the ALLOW policy that matched, or the DENY policy that denied. */
  rbacPolicy?: string;
  /**
   * HTTP status Envoy answers itself: 401 JWT, 403 RBAC, 404 no vhost/route, 503 blackhole or
   * unknown cluster (also set for TCP, whose connection is closed instead), redirects, direct
   * responses, fault aborts. Undefined when the request is forwarded upstream.
   */
  status?: number;
  error?: string;
  /** The filter chain terminated TLS (it has a downstream transport socket). */
  tlsTerminated?: boolean;
  upstreamTls?: 'none' | 'istio' | 'tls';
  upstreamSni?: string;
  /** Config the simulator met but does not model (the result may be wrong in that respect). */
  warnings?: string[];
}
