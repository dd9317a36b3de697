/**
 * The layers of src, bottom first: the one place that says which folder may import which.
 *
 * A folder may import folders of lower tiers only: never one of a higher tier (that would be a
 * back edge) and never a peer in its own tier (peers stay independent of each other). The floor
 * (tier 0) is imported by everybody and imports nothing of src above it. Code outside tests
 * (`*.test.ts`) must follow this; tests may import any folder. Nothing in src outside tests
 * imports `test/`. `scripts/import-graph.ts` prints the graph; `test/architecture/layers.test.ts`
 * enforces it. A new folder of src must be placed here.
 *
 * The order follows istiod: config (pkg/config) → service registries (pilot/pkg/serviceregistry)
 * → the model (pilot/pkg/model) → the xDS server (pilot/pkg/xds) → config generation
 * (pilot/pkg/networking) → the components built on them → the process wiring (pilot/pkg/bootstrap)
 * → the command line.
 */
export const LAYERS: readonly (readonly string[])[] = [
  // 0. The floor. util: logging, errors (the base error, its codes and their gRPC/HTTP mappings),
  //    results, env, durations (Go's syntax and protobuf JSON's), JSON Patch types, ordering, a
  //    bytes LRU (no meshpilot knowledge). gen: the code generated from the Envoy and Istio protos
  //    (scripts/gen-protos.sh); it imports only @bufbuild/protobuf.
  ['util', 'gen'],
  // 1. config: Istio's config kinds, their sources (files, Kubernetes) and validation, host
  //    names and exportTo, labels and selectors, the well-known label/annotation names and
  //    defaults (istiod's pkg/config, pkg/config/labels and pkg/config/constants). template: the Go-template engine the injector
  //    and the installer render with; it knows nothing of the mesh.
  ['config', 'template'],
  // 2. registry: services and workload instances from ServiceEntry, WorkloadEntry and
  //    Kubernetes, built from config (istiod's serviceregistry).
  ['registry'],
  // 3. model: the PushContext and its indexes, Proxy, sidecar scopes, compiled EnvoyFilters, the
  //    xDS cache and its dependency tokens, cluster names (istiod's pilot/pkg/model).
  ['model'],
  // 4. security: the CA, CSR service, authenticators and stream authorization. Below xds because
  //    the xDS server authenticates and authorizes its streams with it (istiod's pilot/pkg/xds
  //    uses pkg/security the same way); it needs the model's Proxy only.
  ['security'],
  // 5. xds: the ADS/Delta server, the Generator interface, push queue and debounce, resources
  //    and type URLs, PGV validation, debug endpoints.
  ['xds'],
  // 6. networking: the Envoy config generators (listeners, routes, clusters, endpoints, filters,
  //    EnvoyFilter patching) that plug into xds as Generators (istiod's pilot/pkg/networking).
  ['networking'],
  // 7. Components built on the layers below, independent of each other: the node agent (SDS,
  //    xDS proxy, Envoy), the CNI plugin and installer, manifest install (Helm charts, profiles),
  //    leader election, the traffic simulator over generated config, the admission webhooks.
  ['agent', 'cni', 'install', 'leader', 'simulation', 'webhooks'],
  // 8. inject: sidecar injection, served by the webhooks.
  ['inject'],
  // 9. gateway-deploy: deploys gateways (Gateway API) with the injection templates and charts.
  ['gateway-deploy'],
  // 10. The programs' wiring: bootstrap assembles `meshpilot discovery` from everything below
  //     (istiod's pilot/pkg/bootstrap); meshctl is the istioctl-like client; demo runs the
  //     bundled mesh with real workloads and a sidecar (as child processes of the CLI).
  ['bootstrap', 'meshctl', 'demo'],
  // 11. cli: the `meshpilot` command line, dispatching to bootstrap, agent, cni and meshctl.
  ['cli'],
];

/** The tier of each folder of src. */
export const TIER: ReadonlyMap<string, number> = new Map(LAYERS.flatMap((folders, tier) => folders.map((f) => [f, tier] as const)));
