/**
 * istioctl's virtualservice.MatchesAnalyzer over http, tcp and tls routes: a second rule without
 * matches is never used (IST0130, "only the last rule can have no matches"), nor is a rule whose
 * every match an earlier rule already has (IST0130); each such duplicated match is IST0131.
 * Matches compare by their JSON without `name`; http rules and matches print as their quoted
 * `name` or `#<index>`, tcp/tls ones as `#<index>`.
 */
import type { Analyzer, Report, ResourceRef } from '../analyze/model.js';
import { MSG } from '../analyze/messages.js';
import { configsOf, refOf } from '../analyze/model.js';

interface Rule {
  readonly name?: string;
  readonly match: readonly object[];
}

const label = (name: string | undefined, i: number): string => (name ? JSON.stringify(name) : `#${i}`);

/** A match's identity: its content without its name (protobuf-es messages are plain data). */
const matchKey = (m: object): string => JSON.stringify({ ...m, name: '' });

function analyzeRules(rules: readonly Rule[], resource: ResourceRef, report: Report): void {
  const seen = new Map<string, number>();
  let emptySeen = false;
  rules.forEach((rule, i) => {
    const ruleName = label(rule.name, i);
    if (rule.match.length === 0) {
      if (emptySeen)
        report({ type: MSG.VirtualServiceUnreachableRule, resource, args: [ruleName, 'only the last rule can have no matches'] });
      emptySeen = true;
      return;
    }
    let dups = 0;
    rule.match.forEach((m, j) => {
      const key = matchKey(m);
      const prior = seen.get(key);
      if (prior !== undefined) {
        dups++;
        const matchName = 'name' in m && typeof m.name === 'string' ? m.name : undefined;
        report({
          type: MSG.VirtualServiceIneffectiveMatch,
          resource,
          args: [ruleName, label(matchName, j), label(rules[prior]?.name, prior)],
        });
      } else seen.set(key, i);
    });
    if (dups === rule.match.length)
      report({ type: MSG.VirtualServiceUnreachableRule, resource, args: [ruleName, 'all matches used by prior rules'] });
  });
}

export const unreachableRoutesAnalyzer: Analyzer = {
  name: 'virtualservice.MatchesAnalyzer',
  description: 'Checks virtual services for unreachable and duplicate matches',
  messages: [MSG.VirtualServiceUnreachableRule, MSG.VirtualServiceIneffectiveMatch],
  analyze(s, report) {
    for (const vs of configsOf(s, 'VirtualService')) {
      const resource = refOf(vs);
      analyzeRules(vs.spec.http, resource, report);
      analyzeRules(vs.spec.tcp, resource, report);
      analyzeRules(vs.spec.tls, resource, report);
    }
  },
};
