/**
 * istiod's injection-time check of the pod's Istio annotations (pkg/kube/inject/validate.go
 * AnnotationValidation): a bad value fails the injection with a message naming the annotation and
 * the value, instead of rendering an istio-init command line that cannot work. The values also go
 * into YAML inside the template, so a value that is not what the annotation allows never reaches it.
 */
import { isIP } from 'node:net';
import { MeshError } from '../util/errors.js';
import { defaultProxyConfig, mergeProxyConfig } from './mesh.js';
import { INTERCEPTION_MODE_ANNOTATION, PROXY_CONFIG_ANNOTATION, STATUS_PORT_ANNOTATION } from '../config/constants.js';

type Check = (value: string) => string | undefined;

function parsePort(s: string): string | undefined {
  const t = s.trim();
  if (!/^\d+$/.test(t) || Number(t) > 65535) return `failed parsing port '${s}': not a port number`;
  return undefined;
}

function portList(name: string): Check {
  return (ports) => {
    const t = ports.trim();
    if (t === '') return undefined;
    for (const p of t.split(',')) {
      const err = parsePort(p);
      if (err !== undefined) return `${name} invalid: ${err}`;
    }
    return undefined;
  };
}

function cidr(s: string): boolean {
  const slash = s.indexOf('/');
  if (slash < 0) return false;
  const ip = s.slice(0, slash);
  const bits = s.slice(slash + 1);
  const family = isIP(ip);
  if (family === 0 || !/^\d+$/.test(bits)) return false;
  return Number(bits) <= (family === 4 ? 32 : 128);
}

function cidrList(name: string, allowStar: boolean): Check {
  return (ranges) => {
    if (allowStar && ranges === '*') return undefined;
    if (ranges.length === 0) return undefined;
    for (const c of ranges.split(',')) if (!cidr(c)) return `${name} invalid: failed parsing cidr '${c}'`;
    return undefined;
  };
}

function interfaces(value: string): string | undefined {
  for (const name of value.split(',')) {
    const n = name.trim();
    // Linux interface names: at most 15 bytes, no '/', whitespace or ':'.
    if (n === '' || n.length > 15 || /[\s/:]/.test(n)) return `invalid interface name "${name}"`;
  }
  return undefined;
}

const uint32: Check = (v) => (/^\d+$/.test(v) && Number(v) <= 0xffffffff ? undefined : `strconv.ParseUint: parsing "${v}": invalid syntax`);
const bool: Check = (v) =>
  ['1', 't', 'T', 'TRUE', 'true', 'True', '0', 'f', 'F', 'FALSE', 'false', 'False'].includes(v)
    ? undefined
    : `strconv.ParseBool: parsing "${v}": invalid syntax`;

/** Kubernetes resource.Quantity syntax (number with optional binary/decimal suffix or exponent). */
const quantity: Check = (v) => {
  if (/\p{Cc}/u.test(v)) return 'value contains control characters';
  return /^[+-]?(\d+(\.\d*)?|\.\d+)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?\d+)?$/.test(v)
    ? undefined
    : "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
};

const CHECKS: Readonly<Record<string, Check>> = {
  [INTERCEPTION_MODE_ANNOTATION]: (m) =>
    ['REDIRECT', 'TPROXY', 'NONE'].includes(m) ? undefined : `interceptionMode invalid, use REDIRECT,TPROXY,NONE: ${m}`,
  [STATUS_PORT_ANNOTATION]: (p) => {
    const err = parsePort(p);
    return err === undefined ? undefined : `excludeInboundPorts invalid: ${err}`;
  },
  'readiness.status.sidecar.istio.io/initialDelaySeconds': uint32,
  'readiness.status.sidecar.istio.io/periodSeconds': uint32,
  'readiness.status.sidecar.istio.io/failureThreshold': uint32,
  'traffic.sidecar.istio.io/includeOutboundIPRanges': cidrList('includeIPRanges', true),
  'traffic.sidecar.istio.io/excludeOutboundIPRanges': cidrList('excludeIPRanges', false),
  'traffic.sidecar.istio.io/includeInboundPorts': (p) => (p === '*' ? undefined : portList('includeInboundPorts')(p)),
  'traffic.sidecar.istio.io/excludeInboundPorts': portList('excludeInboundPorts'),
  'traffic.sidecar.istio.io/excludeOutboundPorts': portList('excludeOutboundPorts'),
  'traffic.sidecar.istio.io/excludeInterfaces': interfaces,
  'traffic.sidecar.istio.io/kubevirtInterfaces': interfaces,
  'istio.io/reroute-virtual-interfaces': interfaces,
  'prometheus.istio.io/merge-metrics': bool,
  [PROXY_CONFIG_ANNOTATION]: (v) => {
    try {
      mergeProxyConfig(defaultProxyConfig(), v, 'proxy config');
      return undefined;
    } catch (err) {
      return `failed to convert to apply proxy config: ${(err as Error).message}`;
    }
  },
  'sidecar.istio.io/proxyCPU': quantity,
  'sidecar.istio.io/proxyMemory': quantity,
  'sidecar.istio.io/proxyCPULimit': quantity,
  'sidecar.istio.io/proxyMemoryLimit': quantity,
};

/** What is wrong with one annotation's value (Go's error text), or undefined when it is fine or not checked. */
export function annotationValueProblem(name: string, value: string): string | undefined {
  return CHECKS[name]?.(value);
}

/** Throws one MeshError listing every bad annotation (istiod's multierror), in name order. */
export function validateAnnotations(annotations: Readonly<Record<string, string>>): void {
  const errors: string[] = [];
  for (const name of Object.keys(annotations).sort()) {
    const check = CHECKS[name];
    const value = annotations[name] ?? '';
    const err = check?.(value);
    if (err !== undefined) errors.push(`invalid value '${value}' for annotation '${name}': ${err}`);
  }
  if (errors.length === 1) throw new MeshError('INVALID_ARGUMENT', errors[0] ?? '');
  if (errors.length > 1)
    throw new MeshError('INVALID_ARGUMENT', `${errors.length} errors occurred:\n${errors.map((e) => `\t* ${e}`).join('\n')}`);
}
