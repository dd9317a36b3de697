/**
 * istioctl's virtualservice.ConflictingMeshGatewayHostsAnalyzer (IST0109): two VirtualServices
 * bound to the mesh gateway with the same host in the same export scope. The host is printed
 * as istioctl's ScopedFqdn, `<scope>/<fqdn>` with `*` for exported everywhere; a host scoped to
 * some namespaces also clashes with an overlapping host exported everywhere. Each VirtualService is
 * reported once; the line is `metadata.name`.
 */
import { hostsOverlap, resolveShortName, type Config } from '../../config/index.js';
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
    // A host scoped to some namespaces also clashes with the same (or an overlapping) host exported everywhere.
    const everywhere = [...byHost].filter(([k]) => k.startsWith('*/'));
    const reported = new Set<Config<'VirtualService'>>();
    for (const [host, scoped] of byHost) {
      const fqdn = host.slice(host.indexOf('/') + 1);
      const list = host.startsWith('*/')
        ? scoped
        : [...scoped, ...everywhere.filter(([k]) => hostsOverlap(fqdn, k.slice(2))).flatMap(([, l]) => l)];
      if (list.length < 2) continue;
      const names = list
        .map((vs) => fullName(refOf(vs)))
        .sort()
        .join(',');
      // As istioctl: each VirtualService once, with the first clash found.
      for (const vs of list) {
        if (reported.has(vs)) continue;
        reported.add(vs);
        const resource = refOf(vs);
        report({ type: MSG.ConflictingMeshGatewayVirtualServiceHosts, resource, args: [names, host], ...at(s, resource, 'metadata.name') });
      }
    }
  },
};
