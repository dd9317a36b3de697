/** telemetry.istio.io Telemetry checks as istiod's webhook runs them (ValidateTelemetry). */
import { MetricsOverrides_TagOverride_Operation, type ProviderRef, type Telemetry } from '../../gen/telemetry/v1alpha1/telemetry_pb.js';
import type { ObjectContext } from './context.js';
import { field, index, key, type Issues } from './issues.js';
import { checkSelectorAndTargets } from './security-targets.js';

function checkProviders(issues: Issues, path: string, providers: readonly ProviderRef[]): void {
  providers.forEach((p, i) => {
    if (p.name === '') issues.add(field(index(field(path, 'providers'), i), 'name'), 'providers.name may not be empty');
  });
}

/**
 * istiod's checks: one of selector/targetRefs, provider names set, sampling within [0, 100], custom
 * tags with their required parts, UPSERT tag overrides with a value and REMOVE ones without. The
 * access log filter's CEL expression is not parsed here (istiod parses it; Envoy rejects a bad one).
 */
export function validateTelemetry(t: Telemetry, _ctx: ObjectContext, issues: Issues): void {
  const spec = 'spec';
  checkSelectorAndTargets(issues, spec, t);
  t.tracing.forEach((tr, i) => {
    const path = index(field(spec, 'tracing'), i);
    checkProviders(issues, path, tr.providers);
    const pct = tr.randomSamplingPercentage;
    if (pct !== undefined && (pct < 0 || pct > 100))
      issues.add(field(path, 'randomSamplingPercentage'), 'randomSamplingPercentage must be in range [0.0, 100.0]');
    for (const [name, tag] of Object.entries(tr.customTags)) {
      const tagPath = key(field(path, 'customTags'), name);
      if (name === '') issues.add(tagPath, 'tag name may not be empty');
      switch (tag.type.case) {
        case 'literal':
          if (tag.type.value.value === '') issues.add(tagPath, 'literal tag value may not be empty');
          break;
        case 'header':
          if (tag.type.value.name === '') issues.add(tagPath, 'header tag name may not be empty');
          break;
        case 'environment':
          if (tag.type.value.name === '') issues.add(tagPath, 'environment tag name may not be empty');
          break;
        default:
          break;
      }
    }
  });
  t.metrics.forEach((m, i) => {
    const path = index(field(spec, 'metrics'), i);
    checkProviders(issues, path, m.providers);
    m.overrides.forEach((o, j) => {
      const oPath = index(field(path, 'overrides'), j);
      for (const [name, to] of Object.entries(o.tagOverrides)) {
        const toPath = key(field(oPath, 'tagOverrides'), name);
        if (to.operation === MetricsOverrides_TagOverride_Operation.UPSERT && to.value === '')
          issues.add(toPath, 'tagOverrides.value must be set when operation is UPSERT');
        if (to.operation === MetricsOverrides_TagOverride_Operation.REMOVE && to.value !== '')
          issues.add(toPath, 'tagOverrides.value may only be set when operation is UPSERT');
      }
      if (o.match?.metricMatch.case === 'customMetric' && o.match.metricMatch.value === '')
        issues.add(field(field(oPath, 'match'), 'customMetric'), 'customMetric may not be empty');
    });
  });
  t.accessLogging.forEach((l, i) => checkProviders(issues, index(field(spec, 'accessLogging'), i), l.providers));
}
