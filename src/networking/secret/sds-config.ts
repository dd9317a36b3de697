import { create } from '@bufbuild/protobuf';
import {
  ApiConfigSource_ApiType,
  ApiVersion,
  ConfigSourceSchema,
  type ConfigSource,
} from '../../gen/envoy/config/core/v3/config_source_pb.js';
import { SdsSecretConfigSchema, type SdsSecretConfig } from '../../gen/envoy/extensions/transport_sockets/tls/v3/secret_pb.js';
import { durationFromMs } from '../common.js';

/** The workload certificate and key the node agent serves over SDS (istiod's `default`). */
export const SDS_DEFAULT = 'default';
/** The mesh root certificate(s) the node agent serves over SDS (istiod's `ROOTCA`). */
export const SDS_ROOT_CA = 'ROOTCA';
/** The bootstrap cluster through which Envoy reaches the node agent's SDS socket. */
export const SDS_CLUSTER = 'sds-grpc';
/** Prefix of SDS names for gateway `credentialName`s (istiod's `kubernetes://`). */
export const CREDENTIAL_PREFIX = 'kubernetes://';

/**
 * Where Envoy fetches a secret: the node agent over the `sds-grpc` bootstrap cluster, as istiod
 * configures it. No initial fetch timeout, so a listener waits for its certificate rather than
 * coming up without one.
 */
export function sdsConfigSource(): ConfigSource {
  return create(ConfigSourceSchema, {
    configSourceSpecifier: {
      case: 'apiConfigSource',
      value: {
        apiType: ApiConfigSource_ApiType.GRPC,
        transportApiVersion: ApiVersion.V3,
        grpcServices: [{ targetSpecifier: { case: 'envoyGrpc', value: { clusterName: SDS_CLUSTER } } }],
        setNodeOnFirstMessageOnly: true,
      },
    },
    initialFetchTimeout: durationFromMs(0),
    resourceApiVersion: ApiVersion.V3,
  });
}

/** An SDS reference to one named secret (`default`, `ROOTCA`, `kubernetes://<name>`). */
export function sdsSecret(name: string): SdsSecretConfig {
  return create(SdsSecretConfigSchema, { name, sdsConfig: sdsConfigSource() });
}
