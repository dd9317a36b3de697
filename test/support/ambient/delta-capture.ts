/**
 * What a control plane serves to ambient's data plane, read over Delta ADS as the real clients ask
 * for it, turned into the JSON documents of testdata/ambient/istiod/:
 * - ztunnel: wildcard subscriptions to istio.workload.Address and istio.security.Authorization;
 * - a waypoint's Envoy (istio-proxy bootstraps waypoints with DELTA_GRPC): wildcard CDS and LDS,
 *   then EDS and RDS by the names those reference, as Envoy does.
 * Every response is ACKed and applied (resources replace, removals delete) until every subscribed
 * type has answered and the stream has been quiet for a moment.
 */
import { create, fromBinary, toBinary, toJson, type JsonObject, type JsonValue } from '@bufbuild/protobuf';
import { anyUnpack, type Any } from '@bufbuild/protobuf/wkt';
import * as grpc from '@grpc/grpc-js';
import { NodeSchema, type Node } from '../../../src/gen/envoy/config/core/v3/base_pb.js';
import { HttpConnectionManagerSchema } from '../../../src/gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js';
import {
  DeltaDiscoveryRequestSchema,
  DeltaDiscoveryResponseSchema,
  type DeltaDiscoveryRequest,
  type DeltaDiscoveryResponse,
} from '../../../src/gen/envoy/service/discovery/v3/discovery_pb.js';
import { AuthorizationSchema } from '../../../src/gen/workloadapi/security/authorization_pb.js';
import { AddressSchema } from '../../../src/gen/workloadapi/workload_pb.js';
import { xdsJsonRegistry } from '../../../src/model/json-registry.js';
import { DELTA_PATH } from '../raw-delta-client.js';
import { waitFor } from '../wait.js';
import { SCHEMA_BY_TYPE, TYPE } from '../xds-resources.js';

export const ADDRESS_TYPE = 'type.googleapis.com/istio.workload.Address';
export const AUTHORIZATION_TYPE = 'type.googleapis.com/istio.security.Authorization';

/** The proxies claim istiod's own release line, so no old-proxy compatibility branch applies. */
const PROXY_ISTIO_VERSION = '1.31.0';

/** ztunnel on node-a, as its xDS client introduces itself. */
export const ZTUNNEL = {
  ip: '10.244.1.2',
  pod: 'ztunnel-abc',
  namespace: 'istio-system',
  nodeName: 'node-a',
} as const;

export function ztunnelNode(): Node {
  const { ip, pod, namespace, nodeName } = ZTUNNEL;
  return create(NodeSchema, {
    id: `ztunnel~${ip}~${pod}.${namespace}~${namespace}.svc.cluster.local`,
    metadata: {
      NAME: pod,
      NAMESPACE: namespace,
      INSTANCE_IPS: ip,
      NODE_NAME: nodeName,
      CLUSTER_ID: 'Kubernetes',
      ISTIO_VERSION: PROXY_ISTIO_VERSION,
    },
    userAgentName: 'ztunnel',
  });
}

/** The waypoint pod of testdata/ambient/cluster/30-waypoint.yaml. */
export const WAYPOINT = {
  ip: '10.244.1.20',
  pod: 'waypoint-5c8f9d7b6-w4ypt',
  namespace: 'apps',
  deployment: 'waypoint',
  serviceAccount: 'waypoint',
  nodeName: 'node-a',
  labels: {
    'gateway.networking.k8s.io/gateway-name': 'waypoint',
    'gateway.networking.k8s.io/gateway-class-name': 'istio-waypoint',
    'gateway.istio.io/managed': 'istio.io-mesh-controller',
    'istio.io/waypoint-for': 'all',
    'istio.io/dataplane-mode': 'none',
    'sidecar.istio.io/inject': 'false',
    'service.istio.io/canonical-name': 'waypoint',
    'service.istio.io/canonical-revision': 'latest',
  },
} as const;

/** The waypoint Pod's IPv6 address when it runs dual-stack (its IPv4 one is WAYPOINT.ip). */
export const WAYPOINT_IPV6 = 'fd00:10:244:1::20';

/**
 * The waypoint's istio-proxy (`proxy waypoint`): the ISTIO_META_* env of istiod's waypoint template
 * (no NETWORK: it is set only on a multi-network mesh) plus what pilot-agent adds itself.
 * `ips`: its INSTANCE_IPS, as the agent reports them (both families on a dual-stack Pod).
 */
export function waypointNode(ips: readonly string[] = [WAYPOINT.ip]): Node {
  const w = WAYPOINT;
  const metadata: JsonObject = {
    NAME: w.pod,
    NAMESPACE: w.namespace,
    INSTANCE_IPS: ips.join(','),
    LABELS: { ...w.labels },
    SERVICE_ACCOUNT: w.serviceAccount,
    NODE_NAME: w.nodeName,
    CLUSTER_ID: 'Kubernetes',
    INTERCEPTION_MODE: 'REDIRECT',
    WORKLOAD_NAME: w.deployment,
    OWNER: `kubernetes://apis/apps/v1/namespaces/${w.namespace}/deployments/${w.deployment}`,
    MESH_ID: 'cluster.local',
    ISTIO_VERSION: PROXY_ISTIO_VERSION,
    ENVOY_STATUS_PORT: 15021,
    ENVOY_PROMETHEUS_PORT: 15090,
    // The template sets neither PEER_METADATA_DISCOVERY nor ENABLE_HBONE, so the agent sends false
    // (its bootstrap turns discovery on for `waypoint~` nodes, but that never reaches this metadata).
    METADATA_DISCOVERY: 'false',
  };
  return create(NodeSchema, {
    id: `waypoint~${w.ip}~${w.pod}.${w.namespace}~${w.namespace}.svc.cluster.local`,
    cluster: `${w.deployment}.${w.namespace}`,
    metadata,
    userAgentName: 'envoy',
  });
}

/** type URL → resource name → the resource as sent. */
export type Holdings = Map<string, Map<string, Any>>;

/** What one stream held when the capture ended, and what kept it from being complete. */
export interface Capture {
  readonly held: Holdings;
  /** Subscribed types the server never answered. */
  readonly unanswered: string[];
  /** How the stream ended early, if it did. */
  readonly error?: string;
}

/** The holdings of a complete capture; an incomplete one is an error naming what is missing. */
export function complete(c: Capture, who: string): Holdings {
  if (c.error !== undefined || c.unanswered.length > 0)
    throw new Error(`${who}: ${c.error ?? ''}${c.unanswered.length > 0 ? ` no answer for ${c.unanswered.join(', ')}` : ''}`);
  return c.held;
}

interface CaptureOptions {
  /** Types subscribed with a wildcard at the start. */
  readonly wildcard: readonly string[];
  /** After a response, the names of other types to subscribe to (Envoy: CDS → EDS names, LDS → RDS names). */
  readonly follow?: (typeUrl: string, held: Holdings) => { typeUrl: string; names: string[] } | undefined;
  readonly timeoutMs?: number;
  /** How long the stream must be quiet before the capture ends. */
  readonly quietMs?: number;
}

/**
 * Opens one Delta ADS stream as `node` on a plaintext gRPC address and returns what it holds once
 * settled, or at the deadline (with what never answered) — a server that lacks a type still gives
 * a capture to compare, not only a timeout.
 */
export async function captureDelta(addr: string, node: Node, opts: CaptureOptions): Promise<Capture> {
  const client = new grpc.Client(addr, grpc.credentials.createInsecure());
  const call = client.makeBidiStreamRequest<DeltaDiscoveryRequest, DeltaDiscoveryResponse>(
    DELTA_PATH,
    (r) => Buffer.from(toBinary(DeltaDiscoveryRequestSchema, r)),
    (b) => fromBinary(DeltaDiscoveryResponseSchema, b),
  );
  let first = true;
  const write = (init: { typeUrl: string; subscribe?: string[]; unsubscribe?: string[]; nonce?: string }): void => {
    call.write(
      create(DeltaDiscoveryRequestSchema, {
        typeUrl: init.typeUrl,
        resourceNamesSubscribe: init.subscribe ?? [],
        resourceNamesUnsubscribe: init.unsubscribe ?? [],
        responseNonce: init.nonce ?? '',
        ...(first ? { node } : {}),
      }),
    );
    first = false;
  };
  const held: Holdings = new Map();
  const answered = new Set<string>();
  const subscribed = new Map<string, Set<string>>();
  let lastAt = Date.now();
  let failed: Error | undefined;
  call.on('error', (e: Error) => (failed = e));
  call.on('data', (resp: DeltaDiscoveryResponse) => {
    lastAt = Date.now();
    answered.add(resp.typeUrl);
    let h = held.get(resp.typeUrl);
    if (!h) held.set(resp.typeUrl, (h = new Map()));
    for (const r of resp.resources) if (r.resource) h.set(r.name, r.resource);
    for (const n of resp.removedResources) h.delete(n);
    write({ typeUrl: resp.typeUrl, nonce: resp.nonce });
    const next = opts.follow?.(resp.typeUrl, held);
    if (!next) return;
    const have = subscribed.get(next.typeUrl) ?? new Set<string>();
    const want = new Set(next.names);
    const add = [...want].filter((n) => !have.has(n));
    const drop = [...have].filter((n) => !want.has(n));
    if (add.length === 0 && drop.length === 0) return;
    subscribed.set(next.typeUrl, want);
    write({ typeUrl: next.typeUrl, subscribe: add, unsubscribe: drop });
  });
  for (const t of opts.wildcard) write({ typeUrl: t });
  const expected = (): string[] => [...opts.wildcard, ...[...subscribed].filter(([, names]) => names.size > 0).map(([t]) => t)];
  try {
    await waitFor(
      () => failed !== undefined || (expected().every((t) => answered.has(t)) && Date.now() - lastAt > (opts.quietMs ?? 1500)),
      {
        timeoutMs: opts.timeoutMs ?? 30_000,
        intervalMs: 100,
        description: `Delta ADS config for ${node.id}`,
      },
    ).catch(() => undefined);
  } finally {
    call.end();
    call.cancel();
    client.close();
  }
  return {
    held,
    unanswered: expected().filter((t) => !answered.has(t)),
    ...(failed ? { error: `stream ended: ${failed.message}` } : {}),
  };
}

/** ztunnel's view: every Address and Authorization. */
export function captureZtunnel(addr: string): Promise<Capture> {
  return captureDelta(addr, ztunnelNode(), { wildcard: [ADDRESS_TYPE, AUTHORIZATION_TYPE] });
}

/** The waypoint Envoy's view: CDS and LDS wildcard, EDS and RDS as referenced. */
export function captureWaypoint(addr: string, node: Node = waypointNode()): Promise<Capture> {
  return captureDelta(addr, node, {
    wildcard: [TYPE.CDS, TYPE.LDS],
    follow: (typeUrl, held) => {
      if (typeUrl === TYPE.CDS) return { typeUrl: TYPE.EDS, names: edsNames(held.get(TYPE.CDS)) };
      if (typeUrl === TYPE.LDS) return { typeUrl: TYPE.RDS, names: rdsNames(held.get(TYPE.LDS)) };
      return undefined;
    },
  });
}

function edsNames(clusters: Map<string, Any> | undefined): string[] {
  const out: string[] = [];
  for (const a of clusters?.values() ?? []) {
    const c = fromBinary(SCHEMA_BY_TYPE[TYPE.CDS], a.value);
    if (c.edsClusterConfig) out.push(c.edsClusterConfig.serviceName || c.name);
  }
  return out.sort();
}

function rdsNames(listeners: Map<string, Any> | undefined): string[] {
  const out = new Set<string>();
  for (const a of listeners?.values() ?? []) {
    const l = fromBinary(SCHEMA_BY_TYPE[TYPE.LDS], a.value);
    for (const fc of [...l.filterChains, ...(l.defaultFilterChain ? [l.defaultFilterChain] : [])])
      for (const f of fc.filters) {
        if (f.configType.case !== 'typedConfig') continue;
        const hcm = anyUnpack(f.configType.value, HttpConnectionManagerSchema);
        if (hcm?.routeSpecifier.case === 'rds') out.add(hcm.routeSpecifier.value.routeConfigName);
      }
  }
  return [...out].sort();
}

/** One resource of a golden file: its xDS name and its proto3 JSON. */
export interface NamedResource {
  readonly name: string;
  readonly resource: JsonValue;
}

export interface WdsDocument {
  readonly addresses: NamedResource[];
  readonly authorizations: NamedResource[];
}

const byResourceName = (a: NamedResource, b: NamedResource): number => a.name.localeCompare(b.name);

/** ztunnel's holdings as JSON (toJson with the generated workload API schemas), sorted by name. */
export function wdsDocument(held: Holdings): WdsDocument {
  const section = (typeUrl: string, schema: typeof AddressSchema | typeof AuthorizationSchema): NamedResource[] =>
    [...(held.get(typeUrl) ?? [])]
      .map(([name, any]) => {
        if (any.typeUrl !== typeUrl) throw new Error(`${name}: a ${any.typeUrl} in the ${typeUrl} response`);
        return { name, resource: toJson(schema, fromBinary(schema, any.value) as never) };
      })
      .sort(byResourceName);
  return { addresses: section(ADDRESS_TYPE, AddressSchema), authorizations: section(AUTHORIZATION_TYPE, AuthorizationSchema) };
}

export interface WaypointDocument {
  readonly listeners: NamedResource[];
  readonly routes: NamedResource[];
  readonly clusters: NamedResource[];
  readonly endpoints: NamedResource[];
}

/**
 * The waypoint's holdings as JSON, every Any unpacked in full: meshpilot's registry knows each type
 * istiod puts in a waypoint's config, so an unknown one fails here, naming the resource.
 */
export function waypointDocument(held: Holdings): WaypointDocument {
  const registry = xdsJsonRegistry();
  const section = (t: keyof typeof SCHEMA_BY_TYPE): NamedResource[] => {
    const schema = SCHEMA_BY_TYPE[t];
    return [...(held.get(t) ?? [])]
      .map(([name, any]) => {
        try {
          return { name, resource: toJson(schema, fromBinary(schema, any.value) as never, { registry }) };
        } catch (err) {
          throw new Error(`${t} ${name}: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
        }
      })
      .sort(byResourceName);
  };
  return { listeners: section(TYPE.LDS), routes: section(TYPE.RDS), clusters: section(TYPE.CDS), endpoints: section(TYPE.EDS) };
}
