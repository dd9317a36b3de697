/**
 * The gRPC xDS bootstrap (GRPC_XDS_BOOTSTRAP) Istio's agent writes for `GENERATOR: grpc`
 * (pkg/istio-agent/grpcxds): one insecure xds_server — the agent's local ADS proxy socket, which
 * holds the mTLS connection to istiod — the node, a `default` file_watcher certificate provider
 * over the agent's output files, and the server listener template istiod's inbound Listeners use.
 */
import { certFilePaths } from './cert-files.js';
import type { AgentNode } from './node-identity.js';
import { msToNanos, protoDurationJson } from '../util/duration.js';

/** istiod names proxyless inbound Listeners `xds.istio.io/grpc/lds/inbound/<ip>:<port>`. */
export const SERVER_LISTENER_NAME_TEMPLATE = 'xds.istio.io/grpc/lds/inbound/%s';
/** The certificate provider instance istiod's proxyless TLS contexts name. */
export const CERT_PROVIDER_INSTANCE = 'default';

export interface GrpcBootstrapOptions {
  readonly node: AgentNode;
  /** `unix:///abs/path` of the agent's ADS proxy, or `host:port` of a plaintext control plane. */
  readonly serverUri: string;
  /** Where cert-chain.pem, key.pem, root-cert.pem are; no certificate provider without it. */
  readonly certDir?: string;
  readonly refreshIntervalMs: number;
}

export function buildGrpcBootstrap(o: GrpcBootstrapOptions): Record<string, unknown> {
  const bootstrap: Record<string, unknown> = {
    xds_servers: [{ server_uri: o.serverUri, channel_creds: [{ type: 'insecure' }], server_features: ['xds_v3'] }],
    // grpc-js-xds fails every RPC without a locality (even an empty one).
    node: { id: o.node.id, metadata: o.node.metadata, locality: {} },
    server_listener_resource_name_template: SERVER_LISTENER_NAME_TEMPLATE,
  };
  if (o.certDir !== undefined) {
    const files = certFilePaths(o.certDir);
    bootstrap.certificate_providers = {
      [CERT_PROVIDER_INSTANCE]: {
        plugin_name: 'file_watcher',
        config: {
          certificate_file: files.certChain,
          private_key_file: files.key,
          ca_certificate_file: files.rootCert,
          refresh_interval: protoDurationJson(msToNanos(o.refreshIntervalMs)),
        },
      },
    };
  }
  return bootstrap;
}
