/**
 * Names and building blocks shared by a waypoint's listeners and clusters (istiod's
 * pilot/pkg/networking/core/waypoint.go, util/internal_upstream.go, match/match.go): the internal
 * listener names, the `inbound-vip` cluster names, the HBONE TLS context, internal upstream
 * transport sockets and the filter-chain matcher pieces.
 */
import type { JsonObject } from '@bufbuild/protobuf';
import { StringValueSchema } from '@bufbuild/protobuf/wkt';
import type { ClusterSchema } from '../../gen/envoy/config/cluster/v3/cluster_pb.js';
import {
  DestinationIPInputSchema,
  DestinationPortInputSchema,
  ApplicationProtocolInputSchema,
} from '../../gen/envoy/extensions/matching/common_inputs/network/v3/network_inputs_pb.js';
import { InternalUpstreamTransportSchema } from '../../gen/envoy/extensions/transport_sockets/internal_upstream/v3/internal_upstream_pb.js';
import { TlsParameters_TlsProtocol, SubjectAltNameMatcher_SanType } from '../../gen/envoy/extensions/transport_sockets/tls/v3/common_pb.js';
import type { CommonTlsContextSchema } from '../../gen/envoy/extensions/transport_sockets/tls/v3/tls_pb.js';
import type { ConfigKey } from '../../config/index.js';
import { TypedStructSchema } from '../../gen/udpa/type/v1/typed_struct_pb.js';
import type { Matcher_OnMatchSchema, MatcherSchema } from '../../gen/xds/type/matcher/v3/matcher_pb.js';
import type { PushContext } from '../../model/index.js';
import { packAny, type Init } from '../common.js';
import { RawBufferSchema } from '../../gen/envoy/extensions/transport_sockets/raw_buffer/v3/raw_buffer_pb.js';
import { sdsConfigSource, SDS_DEFAULT, SDS_ROOT_CA } from '../secret/sds-config.js';

export const CONNECT_TERMINATE = 'connect_terminate';
export const MAIN_INTERNAL = 'main_internal';
export const CONNECT_ORIGINATE = 'connect_originate';
/** The cluster that sends a bound workload's direct traffic to `connect_originate`. */
export const ENCAP_CLUSTER = 'encap';
export const HBONE_PORT = 15008;
/** Envoy's original_dst listener filter: its metadata names the address an internal connection stands for. */
export const ORIGINAL_DST_METADATA_KEY = 'envoy.filters.listener.original_dst';
/** The filter-state keys the CONNECT terminator sets (istiod's xds/filters). */
export const ORIGINAL_DST_LOCAL_IP_KEY = 'envoy.filters.listener.original_dst.local_ip';
export const CONNECT_AUTHORITY_KEY = 'io.istio.connect_authority';
export const PEER_PRINCIPAL_KEY = 'io.istio.peer_principal';

/** Whether a registry object comes from a Kubernetes Service (the Kubernetes registry's source kind, outside Istio's config kinds). */
export const isKubeService = (source: ConfigKey): boolean => (source.kind as string) === 'Service';

export { inboundVipClusterName, parseInboundVipClusterName } from '../../model/index.js';

type TransportSocketInit = NonNullable<Init<typeof ClusterSchema>['transportSocket']>;

/** istiod's RawBufferTransport, named `raw_buffer` (not the extension's full name, as clusters elsewhere). */
function rawBufferSocket(): TransportSocketInit {
  return { name: 'raw_buffer', configType: { case: 'typedConfig', value: packAny(RawBufferSchema, {}) } };
}

/** istiod's DefaultInternalUpstreamTransportSocket: an internal upstream over a raw buffer, passing no metadata. */
export function internalUpstreamSocket(): TransportSocketInit {
  return {
    name: 'internal_upstream',
    configType: { case: 'typedConfig', value: packAny(InternalUpstreamTransportSchema, { transportSocket: rawBufferSocket() }) },
  };
}

/**
 * istiod's WaypointInternalUpstreamTransportSocket: passes the endpoint's `original_dst` and
 * `istio` metadata to the internal listener (connect_originate dials the address it names).
 */
export function waypointInternalUpstreamSocket(): TransportSocketInit {
  return {
    name: 'internal_upstream',
    configType: {
      case: 'typedConfig',
      value: packAny(InternalUpstreamTransportSchema, {
        passthroughMetadata: [ORIGINAL_DST_METADATA_KEY, 'istio'].map((name) => ({
          kind: { kind: { case: 'host' as const, value: {} } },
          name,
        })),
        transportSocket: rawBufferSocket(),
      }),
    },
  };
}

/**
 * istiod's buildCommonConnectTLSContext: the workload certificate and root over SDS, TLS 1.3 only,
 * ALPN h2, peers of the mesh trust domain (and its aliases) by URI SAN prefix.
 */
export function connectTlsContext(push: PushContext, extraSanPrefixes: readonly string[] = []): Init<typeof CommonTlsContextSchema> {
  const domains = [push.mesh.trustDomain];
  const prefixes = [...domains.map((d) => `spiffe://${d}/`), ...extraSanPrefixes];
  return {
    tlsParams: {
      tlsMinimumProtocolVersion: TlsParameters_TlsProtocol.TLSv1_3,
      tlsMaximumProtocolVersion: TlsParameters_TlsProtocol.TLSv1_3,
    },
    alpnProtocols: ['h2'],
    tlsCertificateSdsSecretConfigs: [{ name: SDS_DEFAULT, sdsConfig: sdsConfigSource() }],
    validationContextType: {
      case: 'combinedValidationContext',
      value: {
        defaultValidationContext: {
          matchTypedSubjectAltNames: prefixes.map((p) => ({
            sanType: SubjectAltNameMatcher_SanType.URI,
            matcher: { matchPattern: { case: 'prefix', value: p } },
          })),
        },
        validationContextSdsSecretConfig: { name: SDS_ROOT_CA, sdsConfig: sdsConfigSource() },
      },
    },
  };
}

// The matcher tree of main_internal (istiod's match package).
export type MatcherInit = Init<typeof MatcherSchema>;
export type OnMatchInit = Init<typeof Matcher_OnMatchSchema>;

export const toChain = (name: string): OnMatchInit => ({
  onMatch: { case: 'action', value: { name, typedConfig: packAny(StringValueSchema, { value: name }) } },
});
export const toMatcher = (m: MatcherInit): OnMatchInit => ({ onMatch: { case: 'matcher', value: m } });

function exactMap(
  inputName: string,
  input: ReturnType<typeof packAny>,
  map: Record<string, OnMatchInit>,
  onNoMatch?: OnMatchInit,
): MatcherInit {
  return {
    matcherType: {
      case: 'matcherTree',
      value: { input: { name: inputName, typedConfig: input }, treeType: { case: 'exactMatchMap', value: { map } } },
    },
    ...(onNoMatch ? { onNoMatch } : {}),
  };
}

export const destinationPortMatcher = (map: Record<string, OnMatchInit>): MatcherInit =>
  exactMap('port', packAny(DestinationPortInputSchema, {}), map);

/** HTTP (h2c, http/1.1 as the HTTP inspector detects them) to one chain, anything else to the other. */
export const appProtocolMatcher = (http: OnMatchInit, tcp: OnMatchInit): MatcherInit =>
  exactMap('application-protocol', packAny(ApplicationProtocolInputSchema, {}), { "'h2c'": http, "'http/1.1'": http }, tcp);

export const destinationIpInput = (): ReturnType<typeof packAny> => packAny(DestinationIPInputSchema, {});

/** istio-proxy's peer metadata filter of a waypoint: the downstream peer on connect_terminate, the upstream one on main_internal. */
export function waypointPeerMetadata(side: 'downstream' | 'upstream'): ReturnType<typeof packAny> {
  const value: JsonObject =
    side === 'downstream'
      ? { downstream_discovery: [{ workload_discovery: {} }], shared_with_upstream: true }
      : { upstream_discovery: [{ workload_discovery: {} }] };
  return packAny(TypedStructSchema, { typeUrl: 'type.googleapis.com/io.istio.http.peer_metadata.Config', value });
}
