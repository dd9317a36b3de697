/**
 * NDS (istiod's NdsGenerator): one NameTable resource, unnamed, for a proxy that asks for
 * `type.googleapis.com/istio.networking.nds.v1.NameTable` — the node agent does when it captures
 * DNS. Built once per view (Sidecar scope, IP families, network, whether auto-allocated addresses
 * are used, the proxy's cluster) and cached until a service of the scope or a headless service's
 * endpoints change.
 */
import { toBinary } from '@bufbuild/protobuf';
import { NameTableSchema } from '../../gen/dns/proto/nds_pb.js';
import { type Generator, makeResource } from '../../xds/index.js';
import { TypeUrl } from '../../xds/type-urls.js';
import { buildNameTable, consumesAutoAllocated, proxyIpFamilies } from './name-table.js';

export const ndsGenerator: Generator = {
  generate(proxy, _watched, push) {
    const families = proxyIpFamilies(proxy);
    const view = [
      push.sidecarScopeKey(proxy),
      `${families.v4 ? '4' : ''}${families.v6 ? '6' : ''}`,
      consumesAutoAllocated(proxy) ? 'auto' : '',
      String(proxy.metadata.raw.NETWORK ?? ''),
      // Its cluster: service addresses of its own there, and a headless pod name its cluster's pods have is theirs alone.
      proxy.metadata.clusterId ?? '',
    ].join('|');
    return [push.derive(`NDS|${view}`, () => makeResource('', TypeUrl.NameTable, toBinary(NameTableSchema, buildNameTable(push, proxy))))];
  },
};
