/** What a suite scenario is: a mesh shape, its config, its proxies, and how its route edit shows. */
import type { IstioDoc } from '../../test/support/mesh-fixtures.js';
import type { ProxyFilter, ProxyPlan, Until } from '../load-gen/protocol.js';
import { Mesh, type MeshSize, type PortSpec, type Service } from './mesh.js';

/** Sizes a scenario runs at; anything the command line sets wins. */
export type ScenarioSize = Omit<MeshSize, 'sidecarScope' | 'restart'>;

export interface FileWrite {
  /** Path under the config directory. */
  readonly file: string;
  /** The file's new documents; null removes the file. */
  readonly docs: readonly IstioDoc[] | null;
}

/** One churn step: writes (in batches, `intervalMs` apart), and which proxies must see what. */
export interface StepPlan {
  readonly name: string;
  readonly label: string;
  readonly batches: readonly (readonly FileWrite[])[];
  readonly intervalMs: number;
  readonly expect: ProxyFilter;
  readonly until: Until;
}

/** The route edit of a scenario: the target's routing file with a marker, and where the marker shows. */
export interface RouteEdit {
  readonly docs: readonly IstioDoc[];
  readonly expect: ProxyFilter;
  readonly until: Until;
}

export interface Scenario {
  readonly name: string;
  readonly about: string;
  /** The default suite's sizes (the whole suite stays under 10 minutes on 2 cores) and --quick's. */
  readonly defaults: ScenarioSize;
  readonly quick: ScenarioSize;
  readonly ports: readonly PortSpec[];
  /** The port proxyless clients ask for (`host:port` listeners); none: the scenario has no proxyless clients. */
  readonly proxylessPort?: number;
  /** Labels of the gateway routers (their Gateways select them). */
  readonly routerLabels?: Readonly<Record<string, string>>;
  /** Everything of one service besides its WorkloadEntries (ServiceEntry, DestinationRule, …): its `service` file. */
  serviceDocs(mesh: Mesh, svc: Service): IstioDoc[];
  /** The service's routing (its `routes` file), if it has any. */
  routeDocs?(mesh: Mesh, svc: Service): IstioDoc[];
  /** The measured route edit of the target, marked with `marker`. */
  routeEdit?(mesh: Mesh, svc: Service, marker: string): RouteEdit;
  /** Files besides the per-service ones (policies, gateways …). */
  extraFiles?(mesh: Mesh): Map<string, IstioDoc[]>;
  /** Steps of this scenario only, run after the standard ones. */
  extraSteps?(mesh: Mesh): StepPlan[];
}

/** Every config file of a scenario's mesh. */
export function scenarioFiles(s: Scenario, mesh: Mesh): Map<string, IstioDoc[]> {
  const files = mesh.baseFiles();
  for (const svc of mesh.services) {
    files.set(Mesh.file(svc, 'service'), s.serviceDocs(mesh, svc));
    const routes = s.routeDocs?.(mesh, svc);
    if (routes && routes.length > 0) files.set(Mesh.file(svc, 'routes'), routes);
  }
  for (const [f, docs] of s.extraFiles?.(mesh) ?? []) files.set(f, docs);
  return files;
}

export function scenarioProxies(s: Scenario, mesh: Mesh): ProxyPlan[] {
  return [
    ...mesh.routerPlans(s.routerLabels ?? { istio: 'ingressgateway' }),
    ...mesh.sidecarPlans(),
    ...(s.proxylessPort !== undefined ? mesh.proxylessPlans(s.proxylessPort) : []),
  ];
}
