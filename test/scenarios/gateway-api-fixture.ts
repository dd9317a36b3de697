/**
 * The Gateway API parity scenarios (testdata/scenarios/gateway-api/<name>/config.yaml, one
 * Gateway `gw/gw` each, plus services.yaml shared by all) and how each side runs them:
 * - istiod (scripts/istiod-gateway-api-golden.ts): on a real API server, the Services of
 *   services.yaml with an EndpointSlice each, and the gateway's Service `gw-istio` (ports from the
 *   listeners) with its Pod at 10.2.0.1 — what istiod's automated deployment would have created;
 * - meshpilot (gateway-api-parity.test.ts): the same scenario YAML in a config directory, the
 *   Services as the ServiceEntries istiod would derive (same hosts, ports, endpoints).
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments, stringify } from 'yaml';
import { REPO_ROOT } from '../support/paths.js';
import type { NodeSpec } from '../support/scenario.js';

export const GATEWAY_API_DIR = join(REPO_ROOT, 'testdata/scenarios/gateway-api');
export const GATEWAY_IP = '10.2.0.1';
export const GATEWAY_NAMESPACE = 'gw';
export const GATEWAY_NAME = 'gw';
/** What istiod's deployment names the gateway's Service, Deployment and pods. */
export const GATEWAY_SERVICE = `${GATEWAY_NAME}-istio`;
export const GATEWAY_LABELS = {
  'gateway.networking.k8s.io/gateway-name': GATEWAY_NAME,
  'service.istio.io/canonical-name': GATEWAY_SERVICE,
};

/** The gateway proxy, as its pod's agent connects. */
export const GATEWAY_PROXY: NodeSpec = {
  id: `router~${GATEWAY_IP}~${GATEWAY_SERVICE}-0.${GATEWAY_NAMESPACE}~${GATEWAY_NAMESPACE}.svc.cluster.local`,
  labels: GATEWAY_LABELS,
};

export type Obj = Record<string, unknown> & {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; annotations?: Record<string, string> };
  spec?: Record<string, unknown>;
};

export function scenarioNames(): string[] {
  return readdirSync(GATEWAY_API_DIR, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort();
}

const docs = (file: string): Obj[] =>
  parseAllDocuments(readFileSync(file, 'utf8'))
    .map((d) => d.toJS() as Obj | null)
    .filter((d): d is Obj => d !== null);

export const scenarioObjects = (name: string): Obj[] => docs(join(GATEWAY_API_DIR, name, 'config.yaml'));
export const serviceObjects = (): Obj[] => docs(join(GATEWAY_API_DIR, 'services.yaml'));

/** sha256 of a scenario's inputs: tells whether its golden was captured from the current files. */
export function scenarioDigest(name: string): string {
  const h = createHash('sha256');
  for (const f of [join(GATEWAY_API_DIR, 'services.yaml'), join(GATEWAY_API_DIR, name, 'config.yaml')])
    h.update(readFileSync(f)).update('\0');
  return h.digest('hex');
}

interface Port {
  readonly name: string;
  readonly port: number;
  readonly targetPort: number;
  readonly protocol: string;
}

const protocolOfName = (n: string): string => (n.split('-')[0] ?? '').toUpperCase();

/** The gateway's Service ports: one per listener port, named `<protocol>-<port>`. */
export function gatewayPorts(objects: readonly Obj[]): Port[] {
  const gw = objects.find((o) => o.kind === 'Gateway' && o.apiVersion.startsWith('gateway.networking.k8s.io/'));
  const listeners = (gw?.spec?.listeners as { port: number; protocol: string }[] | undefined) ?? [];
  const seen = new Map<number, Port>();
  for (const l of listeners) {
    if (seen.has(l.port)) continue;
    const proto = l.protocol === 'HTTPS' || l.protocol === 'TLS' ? 'https' : l.protocol.toLowerCase();
    seen.set(l.port, { name: `${proto}-${l.port}`, port: l.port, targetPort: l.port, protocol: protocolOfName(proto) });
  }
  return [...seen.values()];
}

/** A backend Service of services.yaml: its ports and endpoint address. */
export interface BackendService {
  readonly name: string;
  readonly namespace: string;
  readonly address: string;
  readonly ports: readonly Port[];
}

export function backendServices(): BackendService[] {
  return serviceObjects().map((s) => ({
    name: s.metadata.name,
    namespace: s.metadata.namespace ?? 'default',
    address: s.metadata.annotations?.['meshpilot.test/endpoint'] ?? '',
    ports: ((s.spec?.ports as { name: string; port: number; targetPort: number }[] | undefined) ?? []).map((p) => ({
      ...p,
      protocol: protocolOfName(p.name),
    })),
  }));
}

function serviceEntry(
  name: string,
  namespace: string,
  ports: readonly Port[],
  address: string,
  labels: Record<string, string> = {},
): Obj[] {
  return [
    {
      apiVersion: 'networking.istio.io/v1',
      kind: 'ServiceEntry',
      metadata: { name, namespace },
      spec: {
        hosts: [`${name}.${namespace}.svc.cluster.local`],
        location: 'MESH_INTERNAL',
        resolution: 'STATIC',
        ports: ports.map((p) => ({ name: p.name, number: p.port, protocol: p.protocol, targetPort: p.targetPort })),
        workloadSelector: { labels: { 'meshpilot.test/service': name } },
      },
    },
    {
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadEntry',
      metadata: { name: `${name}-0`, namespace },
      spec: { address, labels: { ...labels, 'meshpilot.test/service': name } },
    },
  ];
}

/** Writes meshpilot's config directory for a scenario: its YAML as is, the services as ServiceEntries. */
export function writeMeshpilotConfig(name: string, dir: string): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'config.yaml'), readFileSync(join(GATEWAY_API_DIR, name, 'config.yaml')));
  const entries = [
    // The API server's own Service (default/kubernetes, 443 `https`, no endpoints here), which istiod sees too.
    serviceEntry('kubernetes', 'default', [{ name: 'https', port: 443, targetPort: 6443, protocol: 'HTTPS' }], '')[0]!,
    ...backendServices().flatMap((s) => serviceEntry(s.name, s.namespace, s.ports, s.address)),
    ...serviceEntry(GATEWAY_SERVICE, GATEWAY_NAMESPACE, gatewayPorts(scenarioObjects(name)), GATEWAY_IP, GATEWAY_LABELS),
  ];
  writeFileSync(join(dir, 'services.yaml'), entries.map((e) => stringify(e)).join('---\n'));
}

/** The Kubernetes objects istiod's side gets besides the scenario: Services, EndpointSlices, the gateway Pod. */
export function kubeServiceObjects(name: string): Obj[] {
  const out: Obj[] = [];
  const add = (svc: string, namespace: string, ports: readonly Port[], address: string, pod?: string): void => {
    out.push({
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name: svc, namespace, ...(pod ? { labels: { 'gateway.istio.io/managed': 'istio.io-gateway-controller' } } : {}) },
      spec: {
        ports: ports.map((p) => ({ name: p.name, port: p.port, targetPort: p.targetPort })),
        selector: pod ? { 'gateway.networking.k8s.io/gateway-name': GATEWAY_NAME } : { 'meshpilot.test/service': svc },
      },
    });
    out.push({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: `${svc}-slice`, namespace, labels: { 'kubernetes.io/service-name': svc } } as Obj['metadata'],
      addressType: 'IPv4',
      endpoints: [
        { addresses: [address], conditions: { ready: true }, ...(pod ? { targetRef: { kind: 'Pod', name: pod, namespace } } : {}) },
      ],
      ports: ports.map((p) => ({ name: p.name, port: p.targetPort, protocol: 'TCP' })),
    });
  };
  for (const s of backendServices()) add(s.name, s.namespace, s.ports, s.address);
  add(GATEWAY_SERVICE, GATEWAY_NAMESPACE, gatewayPorts(scenarioObjects(name)), GATEWAY_IP, `${GATEWAY_SERVICE}-0`);
  return out;
}
