/**
 * istioctl's virtualservice.ConflictingMeshGatewayHostsAnalyzer (IST0109): two VirtualServices
 * bound to the mesh gateway with the same host in the same export scope. The host is printed
 * as istioctl's ScopedFqdn, `<scope>/<fqdn>` with `*` for exported everywhere; the line is `metadata.name`.
 */
import { resolveShortName, type Config } from '../../config/index.js';
import { MSG } from '../analyze/messages.js';
import { at, configsOf, fullName, refOf, type Analyzer } from '../analyze/model.js';
import { boundToMesh } from './destinations.js';

export const conflictingMeshGatewayHostsAnalyzer: Analyzer = {
  name: 'virtualservice.ConflictingMeshGatewayHostsAnalyzer',
  description: 'Checks if multiple virtual services associated with the mesh gateway have conflicting hosts',
  messages: [MSG.ConflictingMeshGatewayVirtualServiceHosts],
  analyze(s, report) {
    const byHost = new Map<string, Config<'VirtualService'>[]>();
    for (const vs of configsOf(s, 'VirtualService')) {
      if (!boundToMesh(vs.spec)) continue;
      const exportTo = vs.spec.exportTo;
      const scopes = exportTo.length === 0 || exportTo.includes('*') ? ['*'] : exportTo.map((e) => (e === '.' ? vs.meta.namespace : e));
      for (const h of vs.spec.hosts) {
        for (const scope of new Set(scopes)) {
          const key = `${scope}/${resolveShortName(h, vs.meta.namespace, s.domain)}`;
          const list = byHost.get(key) ?? [];
          if (!list.includes(vs)) list.push(vs);
          byHost.set(key, list);
        }
      }
    }
    for (const [host, list] of byHost) {
      if (list.length < 2) continue;
      const names = list
        .map((vs) => fullName(refOf(vs)))
        .sort()
        .join(',');
      for (const vs of list) {
        const resource = refOf(vs);
        report({ type: MSG.ConflictingMeshGatewayVirtualServiceHosts, resource, args: [names, host], ...at(s, resource, 'metadata.name') });
      }
    }
  },
};
