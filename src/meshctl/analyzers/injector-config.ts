/**
 * The sidecar injector's ConfigMap as istioctl's injection analyzers read it:
 * `istio-sidecar-injector` (or `istio-sidecar-injector-<revision>`), whose `values` key is the
 * Helm values as JSON.
 */
import type { Snapshot } from '../analyze/model.js';
import { objectsOf } from '../analyze/model.js';
import { isRecord, stringAt } from './k8s-fields.js';

const INJECTOR_CONFIG_MAP = 'istio-sidecar-injector';

/** Istio's util.GetInjectorConfigMapName: the default revision uses the bare name. */
export const injectorConfigMapName = (revision: string): string =>
  revision === '' || revision === 'default' ? INJECTOR_CONFIG_MAP : `${INJECTOR_CONFIG_MAP}-${revision}`;

/** The injector ConfigMaps' `values` by ConfigMap name (unparsable values read as empty, as Go's failed Unmarshal). */
export function injectorValues(s: Snapshot): Map<string, Readonly<Record<string, unknown>>> {
  const out = new Map<string, Readonly<Record<string, unknown>>>();
  for (const cm of objectsOf(s, 'ConfigMap')) {
    if (!cm.ref.name.startsWith(INJECTOR_CONFIG_MAP)) continue;
    let values: unknown;
    try {
      values = JSON.parse(stringAt(cm.body, 'data', 'values') ?? '');
    } catch {
      values = {};
    }
    out.set(cm.ref.name, isRecord(values) ? values : {});
  }
  return out;
}

/** The proxy image the injector puts in pods: `global.proxy.image`, prefixed with hub and suffixed with tag unless it is a full reference. */
export function injectedProxyImage(values: Readonly<Record<string, unknown>>): string {
  const image = stringAt(values, 'global', 'proxy', 'image') ?? '';
  if (image.includes('/')) return image;
  return `${stringAt(values, 'global', 'hub') ?? ''}/${image}:${stringAt(values, 'global', 'tag') ?? ''}`;
}
