/**
 * The Kubernetes objects analyzers need besides Istio config: core/v1 Services and Pods. The
 * config parser skips them (meshpilot does not serve them from files), so they are read here from
 * the same text, each with its document's start line.
 */
import { LineCounter, parseAllDocuments } from 'yaml';
import { isJsonFile } from '../../config/parse.js';
import type { K8sNamespace, K8sPod, K8sService, ResourceRef, ServicePort } from './model.js';

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function stringMap(v: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (isRecord(v)) for (const [k, x] of Object.entries(v)) if (typeof x === 'string') out[k] = x;
  return out;
}

export interface CoreObjects {
  readonly services: K8sService[];
  readonly pods: K8sPod[];
  readonly namespaces: K8sNamespace[];
}

const names = (v: unknown): string[] => (Array.isArray(v) ? v.filter(isRecord).map((c) => String(c.name ?? '')) : []);

/** Reads Services and Pods from a file that already parsed as config (so it is syntactically sound). */
export function readCoreObjects(text: string, file: string, defaultNamespace: string): CoreObjects {
  const out: CoreObjects = { services: [], pods: [], namespaces: [] };
  const add = (v: unknown, line: number): void => {
    if (!isRecord(v)) return;
    if (v.kind === 'List' && Array.isArray(v.items)) {
      for (const item of v.items) add(item, line);
      return;
    }
    if (v.apiVersion !== 'v1' || !isRecord(v.metadata) || typeof v.metadata.name !== 'string') return;
    if (v.kind === 'Namespace') {
      out.namespaces.push({ ref: { kind: 'Namespace', namespace: '', name: v.metadata.name, origin: { file, line } }, labels: stringMap(v.metadata.labels) });
      return;
    }
    const ns = typeof v.metadata.namespace === 'string' && v.metadata.namespace !== '' ? v.metadata.namespace : defaultNamespace;
    const ref: ResourceRef = { kind: String(v.kind), namespace: ns, name: v.metadata.name, origin: { file, line } };
    const spec = isRecord(v.spec) ? v.spec : {};
    if (v.kind === 'Service') {
      out.services.push({
        ref,
        selector: isRecord(spec.selector) ? stringMap(spec.selector) : undefined,
        ports: readPorts(spec.ports),
        labels: stringMap(v.metadata.labels),
        type: typeof spec.type === 'string' ? spec.type : 'ClusterIP',
      });
    } else if (v.kind === 'Pod') {
      out.pods.push({
        ref,
        labels: stringMap(v.metadata.labels),
        annotations: stringMap(v.metadata.annotations),
        containers: names(spec.containers),
        initContainers: names(spec.initContainers),
        hostNetwork: spec.hostNetwork === true,
      });
    }
  };
  if (isJsonFile(file)) {
    add(JSON.parse(text) as unknown, 1);
    return out;
  }
  const lc = new LineCounter();
  for (const doc of parseAllDocuments(text, { lineCounter: lc, merge: true })) {
    const start = doc.contents?.range[0] ?? doc.range[0];
    add(doc.toJS() as unknown, lc.linePos(start).line);
  }
  return out;
}

function readPorts(v: unknown): ServicePort[] {
  if (!Array.isArray(v)) return [];
  return v.filter(isRecord).map((p) => ({
    name: typeof p.name === 'string' ? p.name : '',
    port: typeof p.port === 'number' ? p.port : Number(p.port),
    protocol: typeof p.protocol === 'string' ? p.protocol : 'TCP',
    targetPort: p.targetPort === undefined ? String(p.port) : String(p.targetPort),
    ...(typeof p.appProtocol === 'string' ? { appProtocol: p.appProtocol } : {}),
  }));
}
