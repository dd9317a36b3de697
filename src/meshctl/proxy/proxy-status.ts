import { createRegistry, fromBinary, toJson } from '@bufbuild/protobuf';
import type { Any } from '@bufbuild/protobuf/wkt';
import { stringify } from 'yaml';
import { ClientConfigSchema, file_envoy_service_status_v3_csds, type ClientConfig } from '../../gen/envoy/service/status/v3/csds_pb.js';
import { DiscoveryResponseSchema, type DiscoveryResponse } from '../../gen/envoy/service/discovery/v3/discovery_pb.js';
import { xdsJsonRegistry } from '../../model/index.js';
import { formatProxyStatus, formatProxyStatusVerbose, statusRow, type ProxyStatusRow } from './status-format.js';
import { controlPlaneId, debugNodeId, SYNCZ_TYPE, xdsDebugRequest, type XdsDebugOptions } from './xds-debug-client.js';

const CLIENT_CONFIG = 'type.googleapis.com/envoy.service.status.v3.ClientConfig';

export interface ProxyStatusOptions {
  /** One address per control-plane replica; their reports are merged. */
  readonly addresses: readonly string[];
  readonly connection?: Omit<XdsDebugOptions, 'address'>;
  /** Only proxies whose id contains this (istioctl's PrintSingle). */
  readonly proxy?: string;
  readonly verbose?: boolean;
  readonly output?: 'table' | 'json' | 'yaml';
  /** Clock for the `SYNCED (3m2s)` ages. */
  readonly now?: Date;
}

interface Reply {
  readonly address: string;
  readonly resp: DiscoveryResponse;
  readonly configs: ClientConfig[];
  /** The ClientConfig resources kept (same filter as `configs`), for -o json|yaml. */
  readonly kept: Any[];
}

/** Asks every replica for istio.io/debug/syncz; this client's own connection is left out. */
async function gather(opts: ProxyStatusOptions): Promise<Reply[]> {
  return Promise.all(
    opts.addresses.map(async (address) => {
      const self = debugNodeId();
      const resp = await xdsDebugRequest({ ...opts.connection, address }, SYNCZ_TYPE, [], self);
      const decoded = resp.resources
        .filter((r) => r.typeUrl === CLIENT_CONFIG)
        .map((any) => ({ any, cc: fromBinary(ClientConfigSchema, any.value) }))
        .filter(({ cc }) => cc.node?.id !== self && (opts.proxy === undefined || (cc.node?.id ?? '').includes(opts.proxy)));
      return { address, resp, configs: decoded.map((d) => d.cc), kept: decoded.map((d) => d.any) };
    }),
  );
}

/** The rows proxy-status prints, from replies already fetched (ISTIOD: the replica's id, else its address). */
export function rowsOf(replies: readonly Reply[], now: Date): ProxyStatusRow[] {
  return replies.flatMap((r) => r.configs.map((cc) => statusRow(cc, controlPlaneId(r.resp) ?? r.address, now)));
}

/** `meshctl proxy-status [PROXY] [-v] [-o json|yaml]`: the text to print. */
export async function proxyStatus(opts: ProxyStatusOptions): Promise<string> {
  const replies = await gather(opts);
  const output = opts.output ?? 'table';
  if (output !== 'table') {
    // istioctl prints each replica's DiscoveryResponse as proto JSON (4-space indent), or as YAML.
    const registry = createRegistry(xdsJsonRegistry(), file_envoy_service_status_v3_csds);
    return replies
      .map((r) => {
        const json = toJson(DiscoveryResponseSchema, { ...r.resp, resources: r.kept }, { registry });
        return output === 'json' ? `${JSON.stringify(json, undefined, 4)}\n` : stringify(json);
      })
      .join('');
  }
  const rows = rowsOf(replies, opts.now ?? new Date());
  return opts.verbose ? formatProxyStatusVerbose(rows) : formatProxyStatus(rows);
}
