/**
 * istioctl's serviceentry.ConflictingServiceEntryProtocolAnalyzer (IST0177): ServiceEntries
 * visible in the same scope (exportTo namespaces; `*` is seen by every scope) that give one host
 * and port different protocols (compared upper-cased). Each ServiceEntry is reported once, for
 * the first conflicting host/port in (scope, host, port) order, at `metadata.name`.
 */
import type { Config } from '../../config/index.js';
import { MSG } from '../analyze/messages.js';
import { at, configsOf, fullName, refOf, type Analyzer } from '../analyze/model.js';

interface Entry {
  readonly protocol: string;
  readonly se: Config<'ServiceEntry'>;
}

/** The scopes a ServiceEntry is visible in: `*` for everywhere, else the namespaces of its exportTo (`.` is its own). */
function scopes(se: Config<'ServiceEntry'>): string[] {
  const exportTo = se.spec.exportTo;
  if (exportTo.length === 0 || exportTo.includes('*')) return ['*'];
  return [...new Set(exportTo.map((e) => (e === '.' ? se.meta.namespace : e)))];
}

export const conflictingServiceEntryProtocolAnalyzer: Analyzer = {
  name: 'serviceentry.ConflictingServiceEntryProtocolAnalyzer',
  description: 'Checks if multiple ServiceEntries define the same host and port with different protocols',
  messages: [MSG.ConflictingServiceEntryProtocol],
  analyze(s, report) {
    const index = new Map<string, { scope: string; host: string; port: number; entries: Entry[] }>();
    for (const se of configsOf(s, 'ServiceEntry')) {
      for (const scope of scopes(se)) {
        for (const host of se.spec.hosts) {
          for (const p of se.spec.ports) {
            const k = JSON.stringify([scope, host, p.number]);
            const slot = index.get(k) ?? { scope, host, port: p.number, entries: [] };
            slot.entries.push({ protocol: p.protocol, se });
            index.set(k, slot);
          }
        }
      }
    }
    const reported = new Set<string>();
    for (const k of [...index.keys()].sort()) {
      const slot = index.get(k);
      if (!slot) continue;
      const everywhere = slot.scope === '*' ? [] : (index.get(JSON.stringify(['*', slot.host, slot.port]))?.entries ?? []);
      const entries = [...slot.entries, ...everywhere];
      const protocols = [...new Set(entries.map((e) => e.protocol.toUpperCase()))].sort();
      if (protocols.length < 2) continue;
      const names = [...new Set(entries.map((e) => fullName(refOf(e.se))))].sort().join(', ');
      for (const { se } of entries) {
        const resource = refOf(se);
        if (reported.has(fullName(resource))) continue;
        reported.add(fullName(resource));
        report({
          type: MSG.ConflictingServiceEntryProtocol,
          resource,
          args: [names, slot.host, slot.port, protocols.join(', ')],
          ...at(s, resource, 'metadata.name'),
        });
      }
    }
  },
};
