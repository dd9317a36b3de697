import type { SimResult } from './types.js';

export { simulate } from './simulate.js';
export type { SimRequest, SimResult } from './types.js';

/** One line for test messages and the CLI: the decisions made, in the order Envoy makes them. */
export function formatResult(r: SimResult): string {
  const parts: string[] = [];
  const add = (k: string, v: string | number | boolean | undefined): void => {
    if (v !== undefined) parts.push(`${k}=${String(v)}`);
  };
  add('listener', r.listener);
  add('chain', r.filterChain);
  add('tls', r.tlsTerminated ? 'terminated' : undefined);
  add('rds', r.routeConfig);
  add('vhost', r.virtualHost);
  add('route', r.route);
  add('rbac', r.rbac === 'none' ? undefined : r.rbac);
  add('policy', r.rbacPolicy);
  add('cluster', r.cluster);
  add('weights', r.weights?.map((w) => `${w.cluster}:${w.weight}`).join(','));
  add('endpoint', r.endpoint);
  add('upstreamTls', r.upstreamTls);
  add('sni', r.upstreamSni);
  add('rewrite', r.rewrite ? [r.rewrite.host, r.rewrite.path].filter((x) => x !== undefined).join('') : undefined);
  add('redirect', r.redirect?.location);
  add('fault', r.faultAbort ? `${r.faultAbort.status}@${r.faultAbort.percent}%` : undefined);
  add('status', r.status);
  add('error', r.error === undefined ? undefined : JSON.stringify(r.error));
  if (r.warnings) add('warnings', r.warnings.length);
  return parts.length > 0 ? parts.join(' ') : '(empty result)';
}
