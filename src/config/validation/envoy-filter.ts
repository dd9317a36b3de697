/** networking.istio.io EnvoyFilter checks as istiod's webhook runs them (ValidateEnvoyFilter). */
import {
  EnvoyFilter_ApplyTo as ApplyTo,
  EnvoyFilter_Patch_Operation as Op,
  EnvoyFilter_PatchContext as PatchContext,
  type EnvoyFilter,
} from '../../gen/networking/v1alpha3/envoy_filter_pb.js';
import { alphaSelectorWarning } from './common.js';
import type { ObjectContext } from './context.js';
import { field, index, type Issues } from './issues.js';

/** Longer version patterns are not compiled (istiod ignores the match): bounds the regex cost. */
const MAX_PROXY_VERSION_LENGTH = 1024;
const HCM_NAMES = new Set(['envoy.filters.network.http_connection_manager', 'envoy.http_connection_manager']);
const LISTENER_CLASS = new Set([ApplyTo.LISTENER, ApplyTo.FILTER_CHAIN, ApplyTo.NETWORK_FILTER, ApplyTo.HTTP_FILTER]);
const ROUTE_CLASS = new Set([ApplyTo.ROUTE_CONFIGURATION, ApplyTo.VIRTUAL_HOST, ApplyTo.HTTP_ROUTE]);

/**
 * istiod's errors: applyTo, patch and operation present, a value unless REMOVE, a proxyVersion
 * that compiles, a match of the applyTo's class, filter and sub-filter matches with names (a
 * sub-filter only for HTTP_FILTER under the HCM). Patch values are decoded when the EnvoyFilter is
 * applied: one whose Any type meshpilot does not know is reported then (istiod links every type).
 */
export function validateEnvoyFilter(ef: EnvoyFilter, _ctx: ObjectContext, issues: Issues): void {
  // istiod warns on every EnvoyFilter (kubectl apply prints it): patches follow Envoy's internals.
  issues.warn(
    '',
    'EnvoyFilter exposes internal implementation details that may change at any time. ' +
      'Prefer other APIs if possible, and exercise extreme caution, especially around upgrades.',
  );
  if (ef.workloadSelector && Object.keys(ef.workloadSelector.labels).length === 0) {
    issues.warn(field('spec', 'workloadSelector'), alphaSelectorWarning('Envoy filter'));
  }
  // A value that did not decode (an unknown enum name) is reported already and reads as unset here.
  const decodeError = (p: string): boolean => issues.list.some((i) => i.path === p);
  ef.configPatches.forEach((cp, i) => {
    const path = index(field('spec', 'configPatches'), i);
    if (cp.match?.context === PatchContext.WAYPOINT) return;
    const applyTo = field(path, 'applyTo');
    if (cp.applyTo === ApplyTo.INVALID) return decodeError(applyTo) ? undefined : issues.add(applyTo, 'Envoy filter: missing applyTo');
    if (!cp.patch) return issues.add(field(path, 'patch'), 'Envoy filter: missing patch');
    const operation = field(field(path, 'patch'), 'operation');
    if (cp.patch.operation === Op.INVALID)
      return decodeError(operation) ? undefined : issues.add(operation, 'Envoy filter: missing patch operation');
    if (cp.patch.operation !== Op.REMOVE && cp.patch.value === undefined) {
      return issues.add(field(field(path, 'patch'), 'value'), 'Envoy filter: missing patch value for non-remove operation');
    }
    const version = cp.match?.proxy?.proxyVersion ?? '';
    if (version.length > MAX_PROXY_VERSION_LENGTH) {
      issues.warn(
        field(field(field(path, 'match'), 'proxy'), 'proxyVersion'),
        `Envoy filter: proxyVersion match exceeds ${MAX_PROXY_VERSION_LENGTH} characters and will be ignored`,
      );
    } else if (version !== '') {
      try {
        new RegExp(version);
      } catch (err) {
        return issues.add(
          field(field(field(path, 'match'), 'proxy'), 'proxyVersion'),
          `Envoy filter: invalid regex for proxy version, [${(err as Error).message}]`,
        );
      }
    }
    const m = cp.match?.objectTypes;
    if (!m || m.case === undefined) return;
    const matchPath = field(path, 'match');
    if (LISTENER_CLASS.has(cp.applyTo)) {
      if (m.case !== 'listener')
        return issues.add(matchPath, 'Envoy filter: applyTo for listener class objects cannot have non listener match');
      const filter = m.value.filterChain?.filter;
      if (!filter) return;
      const fpath = field(field(field(field(matchPath, 'listener'), 'filterChain'), 'filter'), 'name');
      if (cp.applyTo === ApplyTo.LISTENER || cp.applyTo === ApplyTo.FILTER_CHAIN) {
        issues.warn(fpath.slice(0, -'.name'.length), `Envoy filter: filter match has no effect when used with ${ApplyTo[cp.applyTo]}`);
      }
      if (filter.name === '') return issues.add(fpath, 'Envoy filter: filter match has no name to match on');
      if (!filter.subFilter) return;
      if (cp.applyTo !== ApplyTo.HTTP_FILTER)
        return issues.add(fpath, 'Envoy filter: subfilter match can be used with applyTo HTTP_FILTER only');
      if (!HCM_NAMES.has(filter.name))
        return issues.add(fpath, 'Envoy filter: subfilter match requires filter match with envoy.filters.network.http_connection_manager');
      if (filter.subFilter.name === '') return issues.add(fpath, 'Envoy filter: subfilter match has no name to match on');
    } else if (ROUTE_CLASS.has(cp.applyTo)) {
      if (m.case !== 'routeConfiguration')
        issues.add(matchPath, 'Envoy filter: applyTo for http route class objects cannot have non route configuration match');
    } else if (cp.applyTo === ApplyTo.CLUSTER && m.case !== 'cluster') {
      issues.add(matchPath, 'Envoy filter: applyTo for cluster class objects cannot have non cluster match');
    }
  });
}
