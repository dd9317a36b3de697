import type { Duration } from '@bufbuild/protobuf/wkt';
import { HeaderValueOption_HeaderAppendAction } from '../../gen/envoy/config/core/v3/base_pb.js';
import type { HeaderValueOptionSchema } from '../../gen/envoy/config/core/v3/base_pb.js';
import type {
  RetryPolicySchema,
  RouteAction_HashPolicySchema,
  RouteActionSchema,
} from '../../gen/envoy/config/route/v3/route_components_pb.js';
import { PreviousHostsPredicateSchema } from '../../gen/envoy/extensions/retry/host/previous_hosts/v3/previous_hosts_pb.js';
import { HTTPFaultSchema } from '../../gen/envoy/extensions/filters/http/fault/v3/fault_pb.js';
import type { LoadBalancerSettings } from '../../gen/networking/v1alpha3/destination_rule_pb.js';
import type { Headers_HeaderOperations, HTTPFaultInjection, HTTPRetry } from '../../gen/networking/v1alpha3/virtual_service_pb.js';
import type { Any } from '@bufbuild/protobuf/wkt';
import { durationFromMs, fractionalPercent, packAny, parseGrpcStatus, type Init } from '../common.js';

type RouteActionInit = Init<typeof RouteActionSchema>;
type RetryPolicyInit = Init<typeof RetryPolicySchema>;
type HashPolicyInit = Init<typeof RouteAction_HashPolicySchema>;
type HeaderValueOptionInit = Init<typeof HeaderValueOptionSchema>;

export const FAULT_FILTER = 'envoy.filters.http.fault';
export const ROUTER_FILTER = 'envoy.filters.http.router';

/** istiod's default retry policy (MeshConfig default): 2 attempts on connection-level failures. */
const DEFAULT_RETRY_ON = 'connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes';

/** Retry on another host than the one that failed, as istiod configures every retry policy. */
const PREVIOUS_HOSTS = {
  name: 'envoy.retry_host_predicates.previous_hosts',
  configType: { case: 'typedConfig' as const, value: packAny(PreviousHostsPredicateSchema, {}) },
};

export function retryPolicy(r: HTTPRetry | undefined): RetryPolicyInit | undefined {
  const common = { retryHostPredicate: [PREVIOUS_HOSTS], hostSelectionRetryMaxAttempts: 5n };
  if (!r) return { retryOn: DEFAULT_RETRY_ON, numRetries: 2, ...common };
  if (r.attempts <= 0) return undefined;
  return {
    retryOn: r.retryOn !== '' ? r.retryOn : DEFAULT_RETRY_ON,
    numRetries: r.attempts,
    ...(r.perTryTimeout ? { perTryTimeout: r.perTryTimeout } : {}),
    ...(r.backoff ? { retryBackOff: { baseInterval: r.backoff } } : {}),
    ...common,
  };
}

/** istiod's bound on a direct_response body (1 MiB), on every route configuration it builds for Envoy. */
export const MAX_DIRECT_RESPONSE_BODY_BYTES = 1024 * 1024;

/**
 * Route timeout: Istio's `timeout` or 0 (disabled). For proxyless gRPC istiod mirrors it into
 * max_stream_duration, the field gRPC reads; Envoy sidecars and gateways get it again as the
 * (deprecated) max_grpc_timeout, so a grpc-timeout header cannot outlast it.
 */
export function timeouts(
  timeout: Duration | undefined,
  proxyless: boolean,
): Pick<RouteActionInit, 'timeout' | 'maxStreamDuration' | 'maxGrpcTimeout'> {
  const d = timeout ?? durationFromMs(0);
  return proxyless ? { timeout: d, maxStreamDuration: { maxStreamDuration: d } } : { timeout: d, maxGrpcTimeout: d };
}

/** Istio fault injection → per-route `envoy.filters.http.fault` config; undefined when it injects nothing. */
export function faultConfig(f: HTTPFaultInjection | undefined): Any | undefined {
  if (!f || (!f.abort && !f.delay)) return undefined;
  const pct = (p: { value: number } | undefined, legacy?: number): number => p?.value ?? (legacy && legacy > 0 ? legacy : 100);
  const abort = f.abort;
  const delay = f.delay;
  let abortInit: Init<typeof HTTPFaultSchema>['abort'];
  if (abort) {
    const percentage = fractionalPercent(pct(abort.percentage));
    if (abort.errorType.case === 'httpStatus') abortInit = { errorType: { case: 'httpStatus', value: abort.errorType.value }, percentage };
    else if (abort.errorType.case === 'grpcStatus') {
      const code = parseGrpcStatus(abort.errorType.value);
      if (code !== undefined) abortInit = { errorType: { case: 'grpcStatus', value: code }, percentage };
    }
  }
  let delayInit: Init<typeof HTTPFaultSchema>['delay'];
  if (delay?.httpDelayType.case === 'fixedDelay') {
    delayInit = {
      faultDelaySecifier: { case: 'fixedDelay', value: delay.httpDelayType.value },
      percentage: fractionalPercent(pct(delay.percentage, delay.percent)),
    };
  }
  if (!abortInit && !delayInit) return undefined;
  return packAny(HTTPFaultSchema, { ...(abortInit ? { abort: abortInit } : {}), ...(delayInit ? { delay: delayInit } : {}) });
}

/** DestinationRule consistentHash → route hash policy (the ring-hash cluster hashes on it). */
export function hashPolicy(lb: LoadBalancerSettings | undefined): HashPolicyInit[] {
  if (lb?.lbPolicy.case !== 'consistentHash') return [];
  const key = lb.lbPolicy.value.hashKey;
  switch (key.case) {
    case 'httpHeaderName':
      return [{ policySpecifier: { case: 'header', value: { headerName: key.value } } }];
    case 'httpCookie':
      return [
        {
          policySpecifier: {
            case: 'cookie',
            value: { name: key.value.name, path: key.value.path, ...(key.value.ttl ? { ttl: key.value.ttl } : {}) },
          },
        },
      ];
    case 'useSourceIp':
      return [{ policySpecifier: { case: 'connectionProperties', value: { sourceIp: true } } }];
    case 'httpQueryParameterName':
      return [{ policySpecifier: { case: 'queryParameter', value: { name: key.value } } }];
    default:
      return [];
  }
}

export interface HeaderMutations {
  add: HeaderValueOptionInit[];
  remove: string[];
}

/** Istio header operations: `set` overwrites, `add` appends, `remove` removes. */
export function headerMutations(ops: Headers_HeaderOperations | undefined): HeaderMutations {
  if (!ops) return { add: [], remove: [] };
  const add: HeaderValueOptionInit[] = [];
  for (const [key, value] of Object.entries(ops.set).sort()) {
    add.push({ header: { key, value }, appendAction: HeaderValueOption_HeaderAppendAction.OVERWRITE_IF_EXISTS_OR_ADD });
  }
  for (const [key, value] of Object.entries(ops.add).sort()) {
    add.push({ header: { key, value }, appendAction: HeaderValueOption_HeaderAppendAction.APPEND_IF_EXISTS_OR_ADD });
  }
  return { add, remove: [...ops.remove] };
}
