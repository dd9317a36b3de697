import type { Config } from '../../config/index.js';
import type { GatewayIndex, Proxy, PushContext } from '../../model/index.js';

/** What gateway builders need for one router proxy: its Gateways and the VirtualServices bound to them. */
export interface GatewayContext {
  readonly push: PushContext;
  readonly proxy: Proxy;
  /** The Gateways that select this proxy, in merge order. */
  readonly gateways: readonly Config<'Gateway'>[];
  /** VirtualServices bound to gateway `ns/name` and visible to this proxy. */
  virtualServicesFor(gateway: string): readonly Config<'VirtualService'>[];
}

/** The context of `proxy` from a GatewayIndex; VirtualService lookups are memoised for the context's life. */
export function gatewayContext(
  push: PushContext,
  proxy: Proxy,
  index: Pick<GatewayIndex, 'forProxy' | 'virtualServicesFor'>,
): GatewayContext {
  const memo = new Map<string, readonly Config<'VirtualService'>[]>();
  return {
    push,
    proxy,
    gateways: push.gatewaysFor(proxy),
    virtualServicesFor(gateway) {
      let v = memo.get(gateway);
      if (!v) memo.set(gateway, (v = index.virtualServicesFor(gateway, proxy.namespace)));
      return v;
    },
  };
}
