/**
 * istioctl's telemetry.ProviderAnalyzer (IST0157): with no default access log provider in the
 * mesh config, an enabled access logging entry of a Telemetry that names no provider does nothing.
 * And telemetry.LightstepAnalyzer (IST0002): tracing through a mesh config provider of the
 * Lightstep kind, which is deprecated in favour of OpenTelemetry.
 */
import { MSG } from '../analyze/messages.js';
import type { Analyzer } from '../analyze/model.js';

export const telemetryProviderAnalyzer: Analyzer = {
  name: 'telemetry.ProviderAnalyzer',
  description: 'Validates that providers in telemetry resource is valid',
  messages: [MSG.InvalidTelemetryProvider],
  analyze(s, report) {
    if ((s.meshConfig.defaultProviders?.accessLogging.length ?? 0) > 0) return;
    for (const t of s.telemetries) {
      for (const l of t.spec.accessLogging) {
        if (l.disabled === true || l.providers.length > 0) continue;
        report({ type: MSG.InvalidTelemetryProvider, resource: t.ref, args: [t.ref.name, t.ref.namespace] });
      }
    }
  },
};

export const telemetryLightstepAnalyzer: Analyzer = {
  name: 'telemetry.LightstepAnalyzer',
  description: 'Validates that lightstep provider is still used',
  messages: [MSG.Deprecated],
  analyze(s, report) {
    const lightstep = new Set(s.meshConfig.extensionProviders.filter((p) => p.provider.case === 'lightstep').map((p) => p.name));
    if (lightstep.size === 0) return;
    for (const t of s.telemetries) {
      for (const tr of t.spec.tracing) {
        for (const p of tr.providers) {
          if (!lightstep.has(p.name)) continue;
          report({
            type: MSG.Deprecated,
            resource: t.ref,
            args: [`The Lightstep provider ${p.name} is deprecated, please migrate to OpenTelemetry provider.`],
          });
        }
      }
    }
  },
};
