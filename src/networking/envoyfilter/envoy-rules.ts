/**
 * Rules Envoy enforces when it loads a resource that its proto validation (PGV) does not express.
 * A patched resource that breaks one would be NACKed as a whole, so the patch is not applied.
 */
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import type { Listener } from '../../gen/envoy/config/listener/v3/listener_pb.js';
import { HttpConnectionManagerSchema } from '../../gen/envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager_pb.js';
import { ROUTER_FILTER } from '../route/route-action.js';

const HCM = 'envoy.filters.network.http_connection_manager';

/**
 * Envoy requires the terminal HTTP filter (the router) to be the last of an HCM's chain: "terminal
 * filter named envoy.filters.http.router … must be the last filter in a http filter chain".
 * An HTTP_FILTER ADD appends after it, as istiod does (and Envoy then refuses the listener).
 */
export function listenerRuleViolation(l: Listener): string | undefined {
  for (const fc of [...l.filterChains, ...(l.defaultFilterChain ? [l.defaultFilterChain] : [])]) {
    for (const filter of fc.filters) {
      if (filter.name !== HCM || filter.configType.case !== 'typedConfig') continue;
      const hcm = anyUnpack(filter.configType.value, HttpConnectionManagerSchema);
      const names = hcm?.httpFilters.map((f) => f.name) ?? [];
      const router = names.indexOf(ROUTER_FILTER);
      if (router >= 0 && router < names.length - 1) {
        const chain = fc.name === '' ? '' : ` filter chain ${JSON.stringify(fc.name)}:`;
        return `${chain} HTTP filter ${names[router + 1]} follows the terminal filter ${ROUTER_FILTER}, which Envoy requires to be last`.trimStart();
      }
    }
  }
  return undefined;
}
