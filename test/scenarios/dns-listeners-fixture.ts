/**
 * The auto-allocated-address listener corpus shared by the istiod capture
 * (scripts/istiod-dns-listeners-golden.ts) and the whole-resource comparison (whole/corpora.ts):
 * ServiceEntries without addresses, and sidecars with and without DNS_CAPTURE + DNS_AUTO_ALLOCATE.
 */
import { join } from 'node:path';
import { REPO_ROOT } from '../support/paths.js';
import type { NodeSpec } from '../support/scenario.js';

export const DNS_LISTENERS_DIR = join(REPO_ROOT, 'testdata', 'dns-listeners');
export const DNS_LISTENERS_CONFIG_DIR = join(DNS_LISTENERS_DIR, 'config');
export const DNS_LISTENERS_ISTIOD_DIR = join(DNS_LISTENERS_DIR, 'istiod');

/** istiod allocates in its ServiceEntry registry (its controller needs Kubernetes), as meshpilot does. */
export const DNS_LISTENERS_ISTIOD_ENV: Readonly<Record<string, string>> = { PILOT_ENABLE_IP_AUTOALLOCATE: 'false' };

/** The same proxies seen by an istiod that serves dual stack (ISTIO_DUAL_STACK=true), captured apart. */
export const DNS_LISTENERS_DUAL_STACK_ISTIOD_DIR = join(DNS_LISTENERS_DIR, 'istiod-dual-stack');
export const DNS_LISTENERS_DUAL_STACK_ENV: Readonly<Record<string, string>> = { ...DNS_LISTENERS_ISTIOD_ENV, ISTIO_DUAL_STACK: 'true' };

const allocating = { DNS_CAPTURE: 'true', DNS_AUTO_ALLOCATE: 'true' };

/** Proxies by file name, with the metadata istio-agent sends for ISTIO_META_DNS_CAPTURE / ISTIO_META_DNS_AUTO_ALLOCATE. */
export const DNS_LISTENERS_PROXIES: Readonly<Record<string, NodeSpec>> = {
  allocating: { id: 'sidecar~10.0.0.5~app-0.default~default.svc.cluster.local', labels: { app: 'app' }, metadata: allocating },
  // IPv6 only: listeners on the allocated IPv6 addresses.
  'allocating-ipv6': { id: 'sidecar~fd00::5~app6-0.default~default.svc.cluster.local', labels: { app: 'app6' }, metadata: allocating },
  // Dual-stack (istio-agent sends every pod IP as INSTANCE_IPS; the node id carries the first): one
  // listener per service port, on the IPv4 address with the IPv6 one as an additional address.
  'allocating-dual': {
    id: 'sidecar~10.0.0.7~dual-0.default~default.svc.cluster.local',
    labels: { app: 'dual' },
    metadata: { ...allocating, INSTANCE_IPS: '10.0.0.7,fd00::7' },
  },
  // DNS capture without auto-allocation: no allocated address anywhere (the listeners of a proxy without DNS metadata).
  'capture-only': {
    id: 'sidecar~10.0.0.6~plain-0.default~default.svc.cluster.local',
    labels: { app: 'plain' },
    metadata: { DNS_CAPTURE: 'true' },
  },
  // Gateways of each IP mode: their listeners bind 0.0.0.0, or `::` when IPv6-only.
  'gateway-ipv6': { id: 'router~fd00::9~ingress-0.default~default.svc.cluster.local', labels: { istio: 'ingressgateway' } },
  'gateway-dual': {
    id: 'router~10.0.0.9~ingress-1.default~default.svc.cluster.local',
    labels: { istio: 'ingressgateway' },
    metadata: { INSTANCE_IPS: '10.0.0.9,fd00::9' },
  },
};

/** The proxies captured from the dual-stack istiod: the dual-stack one, and an IPv4 one that must see no change. */
export const DNS_LISTENERS_DUAL_STACK_PROXIES: Readonly<Record<string, NodeSpec>> = {
  'allocating-dual': DNS_LISTENERS_PROXIES['allocating-dual']!,
  allocating: DNS_LISTENERS_PROXIES.allocating!,
  // A dual-stack gateway: `::` as an additional address of its wildcard listeners.
  'gateway-dual': DNS_LISTENERS_PROXIES['gateway-dual']!,
};
