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
 * Besides the layers, each folder has a public surface, listed below in SURFACE: the only modules of
 * it that another folder may import (see there).
 *
 * The order follows istiod: config (pkg/config) → service registries (pilot/pkg/serviceregistry)
 * → the model (pilot/pkg/model) → the xDS server (pilot/pkg/xds) → config generation
 * (pilot/pkg/networking) → the components built on them → the process wiring (pilot/pkg/bootstrap)
 * → the command line.
 */
export const LAYERS: readonly (readonly string[])[] = [
  // 0. The floor. util: logging, errors (the base error, its codes and their gRPC/HTTP mappings),
  //    results, env, durations (Go's syntax and protobuf JSON's), JSON Patch types, ordering, a
  //    bytes LRU, an injectable clock (no meshpilot knowledge). gen: the code generated from the
  //    Envoy and Istio protos (scripts/gen-protos.sh); it imports only @bufbuild/protobuf.
  ['util', 'gen'],
  // 1. kube: the Kubernetes API client — kubeconfig loading, REST verbs, watch, API discovery —
  //    with no mesh knowledge (client-go's rest and tools/clientcmd); everything that talks to a
  //    cluster goes through it.
  ['kube'],
  // 2. config: Istio's config kinds, their sources (files, Kubernetes) and validation, host
  //    names and exportTo, labels and selectors, the well-known label/annotation names and
  //    defaults, MeshConfig with its defaults and parsing (istiod's pkg/config, pkg/config/labels,
  //    pkg/config/constants and pkg/config/mesh). template: the Go-template engine the injector
  //    and the installer render with; it knows nothing of the mesh.
  ['config', 'template'],
  // 3. registry: services and workload instances from ServiceEntry, WorkloadEntry and
  //    Kubernetes, built from config (istiod's serviceregistry).
  ['registry'],
  // 4. model: the PushContext and its indexes, Proxy, sidecar scopes, compiled EnvoyFilters, the
  //    xDS cache and its dependency tokens, cluster names (istiod's pilot/pkg/model).
  ['model'],
  // 5. security: the CA, CSR service, authenticators and stream authorization. Below xds because
  //    the xDS server authenticates and authorizes its streams with it (istiod's pilot/pkg/xds
  //    uses pkg/security the same way); it needs the model's Proxy only.
  ['security'],
  // 6. xds: the ADS/Delta server, the Generator interface, push queue and debounce, resources
  //    and type URLs, PGV validation, debug endpoints.
  ['xds'],
  // 7. networking: the Envoy config generators (listeners, routes, clusters, endpoints, filters,
  //    EnvoyFilter patching) that plug into xds as Generators (istiod's pilot/pkg/networking).
  ['networking'],
  // 8. Components built on the layers below, independent of each other: the node agent (SDS,
  //    xDS proxy, Envoy), the CNI plugin and installer, manifest install (Helm charts, profiles),
  //    leader election, the traffic simulator over generated config, the admission webhooks,
  //    WorkloadEntry auto-registration and health (istiod's pilot/pkg/autoregistration).
  ['agent', 'autoregistration', 'cni', 'install', 'leader', 'simulation', 'webhooks'],
  // 9. inject: sidecar injection, served by the webhooks.
  ['inject'],
  // 10. gateway-deploy: deploys gateways (Gateway API) with the injection templates and charts.
  ['gateway-deploy'],
  // 11. The programs' wiring: bootstrap assembles `meshpilot discovery` from everything below
  //     (istiod's pilot/pkg/bootstrap); meshctl is the istioctl-like client; demo runs the
  //     bundled mesh with real workloads and a sidecar (as child processes of the CLI).
  ['bootstrap', 'meshctl', 'demo'],
  // 12. cli: the `meshpilot` command line, dispatching to bootstrap, agent, cni and meshctl.
  ['cli'],
];

/** The tier of each folder of src. */
export const TIER: ReadonlyMap<string, number> = new Map(LAYERS.flatMap((folders, tier) => folders.map((f) => [f, tier] as const)));

/**
 * The public surface of each folder of src: a module of folder A may import a module of another
 * folder B only if SURFACE lists it for B; the rest of B is internal. A folder's surface is its
 * `index.ts`, which re-exports what other folders use (only that). A further entry is listed only
 * for a reason written beside it, of one of these kinds:
 *   - kube: the module talks to a cluster (the client of src/kube, reflectors, the controllers on
 *     them), which only cluster mode and meshctl load (`meshpilot discovery` reaches it through the
 *     dynamic import of bootstrap/kube-side.ts); an index.ts re-exporting it would load it everywhere.
 *   - light: a caller needs this module alone and must not load the rest of the folder (Node.js
 *     loads every module a barrel re-exports): the node agent, the CNI plugin, the init container's
 *     iptables, the CLI parsing flags.
 *   - command: an entry the CLI loads lazily for one subcommand.
 * Inside a folder, modules import each other by path, not through the folder's index: an index
 * re-exports them, so a module importing it closes an import cycle, which breaks at load time (a
 * cycle through any index.ts fails the check; `import type` is erased, so it does not count).
 * Tests (`*.test.ts`) may import any module: they test the insides. `every module` is for the
 * floor only. `npx tsx scripts/import-graph.ts` lists what bypasses a surface.
 */
export const SURFACE: Readonly<Record<string, 'every module' | readonly string[]>> = {
  // Independent leaf modules (logging, errors, durations…); a barrel would make each import load them all.
  util: 'every module',
  // Generated, one module per proto file (scripts/gen-protos.sh); imported by path.
  gen: 'every module',
  // The client is small and self-contained: one entry (the CNI plugin bundles it too).
  kube: ['index.ts'],
  config: [
    'index.ts',
    'constants.ts', // light: the well-known names and defaults, without the parsers and schemas
    'sources/kube/index.ts', // kube: the Kubernetes config source and the list/watch plumbing others reuse
  ],
  template: ['index.ts'],
  registry: [
    'index.ts',
    'kube/index.ts', // kube: the Kubernetes service registry
  ],
  model: [
    'index.ts',
    'gateway-api/gateway-api-model.ts', // light: meshctl analyze's Gateway API status, without the model's Envoy descriptors
    'kubernetes-secret.ts', // light: meshctl analyze's gateway Secret checks, without the rest of the model
  ],
  security: [
    'index.ts',
    'kube/index.ts', // kube: the CA Secret, root-cert ConfigMaps, TokenReview
    'crypto.ts', // light: keys and certificates, for the node agent
    'spiffe.ts', // light: SPIFFE identities, for the node agent
    'ca/certificates.ts', // light: certificate issuing, for the node agent's tests and its clock-skew grace
  ],
  xds: [
    'index.ts',
    'ads-service.ts', // light: the ADS service definition, which the node agent's xDS proxy serves too
    'type-urls.ts', // light: the type URLs, for the node agent
  ],
  networking: [
    'index.ts',
    'common.ts', // light: Any packing and proto helpers, for the node agent
    'secret/sds-config.ts', // light: the SDS config source, which the node agent's Envoy bootstrap shares
  ],
  agent: ['index.ts'],
  autoregistration: [
    'index.ts',
    'kube-store.ts', // kube: writes WorkloadEntries through the API server
  ],
  cni: [
    'iptables/flags.ts', // command: the usage of `meshpilot iptables`
    'iptables-command.ts', // command: `meshpilot iptables`, run in every init container
    'install/command.ts', // command: `meshpilot cni install|uninstall`
  ],
  install: ['index.ts'],
  leader: [
    'index.ts',
    'leader-election.ts', // kube: the Lease-based elector
  ],
  simulation: ['index.ts'],
  webhooks: [
    'index.ts',
    'ca-bundle-patcher.ts', // kube: patches webhook configurations
    'fail-close-probe.ts', // kube: dry-runs an invalid Gateway
  ],
  inject: [
    'index.ts',
    'kube-inputs.ts', // kube: namespaces, the injector ConfigMap and the mesh config from the cluster
    'validate.ts', // light: meshctl analyze checks annotation values without the webhook and its metrics
  ],
  'gateway-deploy': [
    'options.ts', // light: its flags, which the CLI parses (in bootstrap) without the deployer
    'controller.ts', // kube: the deployment controller
  ],
  bootstrap: [
    'options.ts', // command: the flags of `meshpilot discovery`, parsed before anything runs
    'discovery.ts', // command: the control plane, loaded only when it runs
  ],
  meshctl: [
    'version.ts', // command: `meshpilot version`
    // The analyzers stay with meshctl rather than move below both it and its peer bootstrap (which may
    // not import it); the CLI hands this one entry to `meshpilot discovery` (docs/console.md).
    'analyze/live.ts', // command: `meshctl analyze` as a function, for the web console's config health, loaded when a console asks
  ],
  demo: [
    'run.ts', // command: `meshpilot demo`
  ],
  // The command line: nothing imports it.
  cli: [],
};
