/**
 * istioctl's envoyfilter.EnvoyPatchAnalyzer, patch by patch (stopping at the first without a
 * `patch`, as istioctl does):
 * - ADD or REMOVE on ROUTE_CONFIGURATION / HTTP_ROUTE is ignored by istiod (IST0153 / IST0154);
 * - REPLACE outside HTTP_FILTER, NETWORK_FILTER and VIRTUAL_HOST is invalid (IST0152);
 * - a relative operation (INSERT_BEFORE/AFTER, a valid REPLACE or REMOVE) in a filter without a
 *   priority is order-dependent (IST0151) — IST0155 instead when an EnvoyFilter analyzed earlier
 *   (or an earlier patch) patched the same filter name with a proxyVersion match.
 * The filter name is the patch value's `name`, else the listener match's filter name.
 * Lines point at the patch value.
 */
import type { EnvoyFilter_EnvoyConfigObjectPatch } from '../../gen/networking/v1alpha3/envoy_filter_pb.js';
import { EnvoyFilter_ApplyTo as ApplyTo, EnvoyFilter_Patch_Operation as Op } from '../../gen/networking/v1alpha3/envoy_filter_pb.js';
import { MSG } from '../analyze/messages.js';
import { at, type Analyzer } from '../analyze/model.js';

/**
 * The name two patches are compared by. A `name` in the value is kept apart from a match's filter
 * name (istioctl compares the value's protobuf text form, which never equals a bare name).
 */
function filterName(p: EnvoyFilter_EnvoyConfigObjectPatch): string {
  const value = p.patch?.value;
  if (!value || Object.keys(value).length === 0) return '';
  if (value.name !== undefined) return `value:${JSON.stringify(value.name)}`;
  const m = p.match?.objectTypes;
  return m?.case === 'listener' ? (m.value.filterChain?.filter?.name ?? '') : '';
}

const ROUTE_LEVEL = new Set([ApplyTo.ROUTE_CONFIGURATION, ApplyTo.HTTP_ROUTE]);
const REPLACEABLE = new Set([ApplyTo.NETWORK_FILTER, ApplyTo.HTTP_FILTER, ApplyTo.VIRTUAL_HOST]);

export const envoyFilterAnalyzer: Analyzer = {
  name: 'envoyfilter.EnvoyPatchAnalyzer',
  description: 'Checks an envoyFilters',
  messages: [
    MSG.EnvoyFilterUsesRelativeOperation,
    MSG.EnvoyFilterUsesReplaceOperationIncorrectly,
    MSG.EnvoyFilterUsesAddOperationIncorrectly,
    MSG.EnvoyFilterUsesRemoveOperationIncorrectly,
    MSG.EnvoyFilterUsesRelativeOperationWithProxyVersion,
  ],
  analyze(s, report) {
    // Filter names patched with a proxyVersion match, by the filters analyzed so far.
    const versioned = new Set<string>();
    for (const ef of s.envoyFilters) {
      const resource = ef.ref;
      for (const [i, p] of ef.spec.configPatches.entries()) {
        if (!p.patch) break;
        const name = filterName(p);
        const line = at(s, resource, `spec.configPatches[${i}].patch.value`);
        const relative = (): void => {
          if (ef.spec.priority !== 0) return;
          const type = versioned.has(name) ? MSG.EnvoyFilterUsesRelativeOperationWithProxyVersion : MSG.EnvoyFilterUsesRelativeOperation;
          report({ type, resource, args: [], ...line });
        };
        switch (p.patch.operation) {
          case Op.ADD:
            if (ROUTE_LEVEL.has(p.applyTo)) report({ type: MSG.EnvoyFilterUsesAddOperationIncorrectly, resource, args: [], ...line });
            break;
          case Op.REMOVE:
            if (ROUTE_LEVEL.has(p.applyTo)) report({ type: MSG.EnvoyFilterUsesRemoveOperationIncorrectly, resource, args: [], ...line });
            else relative();
            break;
          case Op.REPLACE:
            if (!REPLACEABLE.has(p.applyTo)) report({ type: MSG.EnvoyFilterUsesReplaceOperationIncorrectly, resource, args: [], ...line });
            else relative();
            break;
          case Op.INSERT_BEFORE:
          case Op.INSERT_AFTER:
            relative();
            break;
          default:
            break;
        }
        if ((p.match?.proxy?.proxyVersion ?? '') !== '') versioned.add(name);
      }
    }
  },
};
