import type { Any } from '@bufbuild/protobuf/wkt';
import { CorsPolicySchema } from '../../gen/envoy/extensions/filters/http/cors/v3/cors_pb.js';
import { CorsPolicy_UnmatchedPreflights, type CorsPolicy } from '../../gen/networking/v1alpha3/virtual_service_pb.js';
import { FractionalPercent_DenominatorType } from '../../gen/envoy/type/v3/percent_pb.js';
import { packAny } from '../common.js';
import { stringMatcher } from './route-match.js';

export const CORS_FILTER = 'envoy.filters.http.cors';

/**
 * A VirtualService corsPolicy as the per-route config of Envoy's CORS filter (istiod's
 * translateCORSPolicy): origins as string matchers (the deprecated `allowOrigin` as exact
 * matches), lists joined with commas, max age in seconds, always enabled.
 */
export function corsPerRouteConfig(p: CorsPolicy | undefined): Any | undefined {
  if (!p) return undefined;
  const origins = [
    ...p.allowOrigin.map((o) => ({ matchPattern: { case: 'exact' as const, value: o } })),
    ...p.allowOrigins.flatMap((m) => stringMatcher(m) ?? []),
  ];
  return packAny(CorsPolicySchema, {
    allowOriginStringMatch: origins,
    allowMethods: p.allowMethods.join(','),
    allowHeaders: p.allowHeaders.join(','),
    exposeHeaders: p.exposeHeaders.join(','),
    ...(p.maxAge ? { maxAge: String(p.maxAge.seconds) } : {}),
    ...(p.allowCredentials !== undefined ? { allowCredentials: p.allowCredentials } : {}),
    filterEnabled: { defaultValue: { numerator: 100, denominator: FractionalPercent_DenominatorType.HUNDRED } },
    // Unset forwards preflights no origin matches to the app, as FORWARD does (istiod's default).
    forwardNotMatchingPreflights: p.unmatchedPreflights !== CorsPolicy_UnmatchedPreflights.IGNORE,
  });
}
