/** Config pieces and scenario shapes several scenarios share. */
import { dest, type IstioDoc } from '../../../test/support/mesh-fixtures.js';
import { istioDoc, type Mesh, type PortSpec, type Service } from '../mesh.js';
import type { RouteEdit, Scenario, ScenarioSize } from '../scenario.js';

/** A DestinationRule with subsets v1 and v2 (by the workloads' `version` label). */
export function subsetRule(svc: Service, trafficPolicy?: Record<string, unknown>): IstioDoc {
  return istioDoc('DestinationRule', svc.name, svc.ns, {
    host: svc.host,
    ...(trafficPolicy ? { trafficPolicy } : {}),
    subsets: [
      { name: 'v1', labels: { version: 'v1' } },
      { name: 'v2', labels: { version: 'v2' } },
    ],
  });
}

/** The header match the route edit adds in front of a service's HTTP routes. */
export function markerRoute(host: string, port: number, marker: string, subset: string | undefined = 'v2'): Record<string, unknown> {
  return { match: [{ headers: { 'x-bench-change': { exact: marker } } }], route: [dest(host, subset, undefined, port)] };
}

/** An HTTP route edit: the marker shows in the RouteConfigurations of every proxy that routes to `routedHost`. */
export function httpRouteEdit(
  docs: readonly IstioDoc[],
  routedHost: string,
  marker: string,
  kinds?: RouteEdit['expect']['kinds'],
): RouteEdit {
  return {
    docs,
    expect: { ...(kinds ? { kinds } : {}), holding: { type: 'rds', bytes: routedHost } },
    until: { type: 'rds', contains: [marker] },
  };
}

export const size = (
  services: number,
  instances: number,
  sidecars: number,
  proxyless: number,
  routers = 0,
  namespaces = 10,
): ScenarioSize => ({
  services,
  instances,
  sidecars,
  proxyless,
  routers,
  namespaces,
});

/** What a scenario is called, says and how big it runs. */
type Named = Pick<Scenario, 'name' | 'about' | 'defaults' | 'quick'>;

/** A VirtualService splitting 90/10 between v1 and v2, after `before` (rules in front). */
function splitService(svc: Service, port: number, before: readonly unknown[]): IstioDoc {
  return istioDoc('VirtualService', svc.name, svc.ns, {
    hosts: [svc.host],
    http: [...before, { route: [dest(svc.host, 'v1', 90, port), dest(svc.host, 'v2', 10, port)] }],
  });
}

/**
 * HTTP services: ServiceEntry (with a VIP unless `vip: false`), DestinationRule v1/v2 and a
 * VirtualService (90/10 unless `virtualService` says otherwise) on the services `routed` picks
 * (all by default); proxyless clients ask for `port`. The route edit puts a marker header match
 * in front of the target's rules.
 */
export function httpScenario(
  o: Named & {
    port: number;
    ports?: readonly PortSpec[];
    vip?: boolean;
    routed?: (mesh: Mesh, svc: Service) => boolean;
    virtualService?: (svc: Service, port: number, before: readonly unknown[]) => IstioDoc;
  },
): Scenario {
  const vs = o.virtualService ?? splitService;
  const routed = o.routed ?? (() => true);
  return {
    name: o.name,
    about: o.about,
    defaults: o.defaults,
    quick: o.quick,
    ports: o.ports ?? [{ number: o.port, name: 'http', protocol: 'HTTP' }],
    proxylessPort: o.port,
    serviceDocs: (mesh, svc) => [mesh.serviceEntry(svc, { vip: o.vip ?? true }), subsetRule(svc)],
    routeDocs: (mesh, svc) => (routed(mesh, svc) ? [vs(svc, o.port, [])] : []),
    routeEdit: (_mesh, svc, marker) => httpRouteEdit([vs(svc, o.port, [markerRoute(svc.host, o.port, marker)])], svc.host, marker),
  };
}

/**
 * TCP or TLS services (no proxyless clients: gRPC does not do raw TCP), routed to subset v1 by
 * `route`. The route edit splits v1/v2 90/10, seen as the v2 cluster appearing in the listener.
 */
export function l4Scenario(
  o: Named & {
    port: PortSpec;
    vip: boolean;
    trafficPolicy?: Record<string, unknown>;
    route: (svc: Service, to: unknown[]) => IstioDoc;
  },
): Scenario {
  const n = o.port.number;
  const cluster = (svc: Service, subset: string): string => `outbound|${n}|${subset}|${svc.host}`;
  return {
    name: o.name,
    about: o.about,
    defaults: o.defaults,
    quick: o.quick,
    ports: [o.port],
    serviceDocs: (mesh, svc) => [mesh.serviceEntry(svc, { vip: o.vip }), subsetRule(svc, o.trafficPolicy)],
    routeDocs: (_mesh, svc) => [o.route(svc, [dest(svc.host, 'v1', undefined, n)])],
    routeEdit: (_mesh, svc) => ({
      docs: [o.route(svc, [dest(svc.host, 'v1', 90, n), dest(svc.host, 'v2', 10, n)])],
      expect: { holding: { type: 'lds', bytes: cluster(svc, 'v1') } },
      until: { type: 'lds', contains: [cluster(svc, 'v2')] },
    }),
  };
}
