import { type RouteConfiguration, RouteConfigurationSchema } from '../../gen/envoy/config/route/v3/route_pb.js';
import { RouteSchema, VirtualHostSchema, type Route, type VirtualHost } from '../../gen/envoy/config/route/v3/route_components_pb.js';
import { insertAfterFirst, insertBeforeFirst } from './list-ops.js';
import { mergeValue, patchesOf, valueOf, type PatchRun } from './listener-patch.js';
import { contextMatches, hasRouteMatch, isMerge, routeConfigurationMatches, routeMatches, virtualHostMatches } from './match.js';
import { ApplyTo, Op, type CompiledPatch, type PatchContext } from '../../model/index.js';

/**
 * istiod's ApplyRouteConfigurationPatches: ROUTE_CONFIGURATION merges, then per virtual host
 * removes/merges/replaces and its routes, then VIRTUAL_HOST ADDs. Patches `rc` in place.
 */
export function patchRouteConfiguration(ctx: PatchContext, run: PatchRun, rc: RouteConfiguration): void {
  const rcMatches = (p: CompiledPatch): boolean => contextMatches(ctx, p) && routeConfigurationMatches(ctx, rc, p, run.portMap);
  for (const p of patchesOf(run, ApplyTo.ROUTE_CONFIGURATION)) {
    if (!isMerge(p.operation) || !rcMatches(p)) continue;
    run.touched.add(p.key);
    mergeValue(RouteConfigurationSchema, rc, p);
  }
  const vhPatches = patchesOf(run, ApplyTo.VIRTUAL_HOST);
  const removed = new Set<string>();
  rc.virtualHosts.forEach((vh, i) => {
    for (const p of vhPatches) {
      if (!rcMatches(p) || !virtualHostMatches(vh, p)) continue;
      if (p.operation === Op.REMOVE) {
        run.touched.add(p.key);
        removed.add(vh.name);
        return;
      }
      if (isMerge(p.operation)) {
        run.touched.add(p.key);
        mergeValue(VirtualHostSchema, vh, p);
      } else if (p.operation === Op.REPLACE) {
        run.touched.add(p.key);
        // Later patches see the replacement, as istiod's index into the slice does.
        vh = valueOf(VirtualHostSchema, p);
        rc.virtualHosts[i] = vh;
      }
    }
    patchRoutes(run, rcMatches, vh);
  });
  for (const p of vhPatches) {
    if (p.operation !== Op.ADD || !rcMatches(p)) continue;
    run.touched.add(p.key);
    rc.virtualHosts.push(valueOf(VirtualHostSchema, p));
  }
  // istiod drops every virtual host that carries a removed one's name (added ones included).
  if (removed.size > 0) rc.virtualHosts = rc.virtualHosts.filter((vh) => !removed.has(vh.name));
}

function patchRoutes(run: PatchRun, rcMatches: (p: CompiledPatch) => boolean, vh: VirtualHost): void {
  const patches = patchesOf(run, ApplyTo.HTTP_ROUTE).filter((p) => rcMatches(p) && virtualHostMatches(vh, p));
  if (patches.length === 0) return;
  const routes: (Route | undefined)[] = [...vh.routes];
  routes.forEach((r, i) => {
    for (const p of patches) {
      if (!r || !routeMatches(r, p)) continue;
      if (p.operation === Op.REMOVE) {
        run.touched.add(p.key);
        routes[i] = undefined;
        return;
      }
      if (isMerge(p.operation)) mergeValue(RouteSchema, r, p);
      run.touched.add(p.key);
    }
  });
  // Adds see removed routes as holes (istiod filters them out after the adds).
  const withHoles = routes;
  for (const p of patches) {
    const make = (): Route => valueOf(RouteSchema, p);
    const matches = (r: Route | undefined): boolean => r !== undefined && routeMatches(r, p);
    switch (p.operation) {
      case Op.ADD:
        withHoles.push(make());
        break;
      case Op.INSERT_AFTER:
        if (!hasRouteMatch(p)) withHoles.push(make());
        else insertAfterFirst(withHoles, matches, make);
        break;
      case Op.INSERT_BEFORE:
        if (!hasRouteMatch(p)) withHoles.unshift(make());
        else insertBeforeFirst(withHoles, matches, make);
        break;
      case Op.INSERT_FIRST:
        // With a route match, still first, but only when some route matches.
        if (!hasRouteMatch(p) || withHoles.some(matches)) withHoles.unshift(make());
        break;
      default:
        continue;
    }
    run.touched.add(p.key);
  }
  vh.routes = withHoles.filter((r): r is Route => r !== undefined);
}
