/**
 * Partial decoding of encoded xDS resources: only the top-level fields the simulated proxies need
 * (a resource's name, a cluster's EDS service name), read with protobuf-es' wire reader and the
 * field numbers of the generated schemas. A sidecar of a large mesh receives thousands of
 * Clusters per response; decoding each fully would make the load generator, not the control
 * plane, the bottleneck.
 */
import { create, type DescMessage } from '@bufbuild/protobuf';
import type { Any } from '@bufbuild/protobuf/wkt';
import { DiscoveryResponseSchema, type DiscoveryResponse } from '../../src/gen/envoy/service/discovery/v3/discovery_pb.js';
import { BinaryReader, WireType } from '@bufbuild/protobuf/wire';
import { Cluster_DiscoveryType, ClusterSchema, Cluster_EdsClusterConfigSchema } from '../../src/gen/envoy/config/cluster/v3/cluster_pb.js';
import { ClusterLoadAssignmentSchema } from '../../src/gen/envoy/config/endpoint/v3/endpoint_pb.js';
import { ListenerSchema } from '../../src/gen/envoy/config/listener/v3/listener_pb.js';
import { RouteConfigurationSchema } from '../../src/gen/envoy/config/route/v3/route_pb.js';
import { TYPE } from '../../test/support/xds-resources.js';

function fieldNo(schema: DescMessage, localName: string): number {
  const f = schema.field[localName];
  if (!f) throw new Error(`${schema.typeName} has no field ${localName}`);
  return f.number;
}

/** Field number of the name of each type's resource (Listener.name … ClusterLoadAssignment.cluster_name). */
const NAME_FIELD: Readonly<Record<string, number>> = {
  [TYPE.LDS]: fieldNo(ListenerSchema, 'name'),
  [TYPE.RDS]: fieldNo(RouteConfigurationSchema, 'name'),
  [TYPE.CDS]: fieldNo(ClusterSchema, 'name'),
  [TYPE.EDS]: fieldNo(ClusterLoadAssignmentSchema, 'clusterName'),
};
const CLUSTER_NAME = fieldNo(ClusterSchema, 'name');
const CLUSTER_TYPE = fieldNo(ClusterSchema, 'type');
const CLUSTER_EDS_CONFIG = fieldNo(ClusterSchema, 'edsClusterConfig');
const EDS_SERVICE_NAME = fieldNo(Cluster_EdsClusterConfigSchema, 'serviceName');

/** Visits the top-level fields of an encoded message; `fn` returns true when it consumed the field, false to skip it. */
function scan(bytes: Uint8Array, fn: (no: number, r: BinaryReader, wt: WireType) => boolean | 'stop'): void {
  const r = new BinaryReader(bytes);
  while (r.pos < r.len) {
    const [no, wt] = r.tag();
    const done = fn(no, r, wt);
    if (done === 'stop') return;
    if (!done) r.skip(wt, no);
  }
}

/** The name of an encoded resource of `typeUrl` (SotW responses carry only the Any). */
export function resourceName(typeUrl: string, bytes: Uint8Array): string {
  const want = NAME_FIELD[typeUrl];
  if (want === undefined) throw new Error(`no name field known for ${typeUrl}`);
  let name = '';
  scan(bytes, (no, r, wt) => {
    if (no !== want || wt !== WireType.LengthDelimited) return false;
    name = r.string();
    return 'stop';
  });
  return name;
}

/** The EDS service name of an encoded Cluster (eds_cluster_config.service_name, else its name) if it is an EDS cluster. */
export function clusterEdsServiceName(bytes: Uint8Array): string | undefined {
  let name = '';
  let eds = false;
  let serviceName = '';
  scan(bytes, (no, r, wt) => {
    if (no === CLUSTER_NAME && wt === WireType.LengthDelimited) name = r.string();
    else if (no === CLUSTER_TYPE && wt === WireType.Varint) eds = r.int32() === Cluster_DiscoveryType.EDS;
    else if (no === CLUSTER_EDS_CONFIG && wt === WireType.LengthDelimited) {
      scan(r.bytes(), (n, inner, iwt) => {
        if (n !== EDS_SERVICE_NAME || iwt !== WireType.LengthDelimited) return false;
        serviceName = inner.string();
        return 'stop';
      });
    } else return false;
    return true;
  });
  if (!eds) return undefined;
  return serviceName !== '' ? serviceName : name;
}

const RESP_VERSION_INFO = fieldNo(DiscoveryResponseSchema, 'versionInfo');
const RESP_RESOURCES = fieldNo(DiscoveryResponseSchema, 'resources');
const RESP_TYPE_URL = fieldNo(DiscoveryResponseSchema, 'typeUrl');
const RESP_NONCE = fieldNo(DiscoveryResponseSchema, 'nonce');
const ANY_VALUE = 2;

/**
 * A SotW DiscoveryResponse with only what a simulated proxy reads: version, type, nonce and each
 * resource's value as a view of the response bytes (each Any's type_url is the response's: not
 * decoded thousands of times per response). Other fields are skipped.
 */
export function leanDiscoveryResponse(buf: Uint8Array): DiscoveryResponse {
  let versionInfo = '';
  let typeUrl = '';
  let nonce = '';
  const values: Uint8Array[] = [];
  scan(buf, (no, r, wt) => {
    if (wt !== WireType.LengthDelimited) return false;
    if (no === RESP_VERSION_INFO) versionInfo = r.string();
    else if (no === RESP_TYPE_URL) typeUrl = r.string();
    else if (no === RESP_NONCE) nonce = r.string();
    else if (no === RESP_RESOURCES) {
      let value: Uint8Array = new Uint8Array(0);
      scan(r.bytes(), (n, inner, iwt) => {
        if (n !== ANY_VALUE || iwt !== WireType.LengthDelimited) return false;
        value = inner.bytes();
        return 'stop';
      });
      values.push(value);
    } else return false;
    return true;
  });
  const resources: Any[] = values.map((value) => ({ $typeName: 'google.protobuf.Any', typeUrl, value }));
  return create(DiscoveryResponseSchema, { versionInfo, typeUrl, nonce, resources });
}
