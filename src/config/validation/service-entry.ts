/** Semantic checks for ServiceEntry, as istiod's validation webhook makes them. */
import { ServiceEntry_Resolution, type ServiceEntry } from '../../gen/networking/v1alpha3/service_entry_pb.js';
import {
  checkExportTo,
  checkFQDN,
  checkIPSubnet,
  checkLabels,
  checkPartialWildcard,
  checkPort,
  checkPortName,
  checkProtocol,
  alphaSelectorWarning,
  checkSelectorLabels,
  checkWildcardDomain,
  isHTTPProtocol,
  isIPAddress,
  isTCPProtocol,
  isTLSProtocol,
  parseProtocol,
} from './common.js';
import type { ObjectContext } from './context.js';
import { field, index, key, type Issues } from './issues.js';
import { validateWorkloadEntryAt } from './workload-entry.js';

/** The label a ServiceEntry opts out of address auto-allocation with (`"false"`). */
const AUTOALLOCATE_LABEL = 'networking.istio.io/enable-autoallocate-ip';

export function validateServiceEntry(se: ServiceEntry, ctx: ObjectContext, issues: Issues): void {
  const spec = 'spec';
  if (se.workloadSelector) {
    const labels = field(field(spec, 'workloadSelector'), 'labels');
    checkSelectorLabels(issues, labels, se.workloadSelector.labels, alphaSelectorWarning('service entry'));
  }
  if (se.workloadSelector && se.endpoints.length > 0) {
    issues.add(spec, 'only one of WorkloadSelector or Endpoints is allowed in Service Entry');
  }

  if (se.hosts.length === 0) issues.add(field(spec, 'hosts'), 'service entry must have at least one host');
  se.hosts.forEach((h, i) => {
    const p = index(field(spec, 'hosts'), i);
    if (h === '*') issues.add(p, `invalid host ${h}`);
    else {
      issues.check(p, checkWildcardDomain(h));
      // `*foo.example.com` is a valid name, but only DYNAMIC_DNS resolves such a pattern.
      const partial = se.resolution !== ServiceEntry_Resolution.DYNAMIC_DNS ? checkPartialWildcard(h) : undefined;
      if (partial !== undefined) issues.warn(p, partial);
    }
  });

  let cidr = false;
  se.addresses.forEach((a, i) => {
    cidr ||= a.includes('/');
    issues.check(index(field(spec, 'addresses'), i), checkIPSubnet(a));
  });
  if (cidr && se.resolution !== ServiceEntry_Resolution.NONE && se.resolution !== ServiceEntry_Resolution.STATIC) {
    issues.add(field(spec, 'addresses'), 'CIDR addresses are allowed only for NONE/STATIC resolution types');
  }

  // istiod allocates addresses (PILOT_ENABLE_IP_AUTOALLOCATE, on by default) unless the resolution
  // is NONE or the ServiceEntry opts out with its label.
  const optOut = (ctx.labels[AUTOALLOCATE_LABEL] ?? '').toLowerCase() === 'false';
  const autoAllocation = se.resolution !== ServiceEntry_Resolution.NONE && !optOut;
  const portNames = new Set<string>();
  const portNumbers = new Set<number>();
  se.ports.forEach((port, i) => {
    const p = index(field(spec, 'ports'), i);
    if (portNames.has(port.name)) issues.add(field(p, 'name'), `service entry port name "${port.name}" already defined`);
    if (portNumbers.has(port.number)) issues.add(field(p, 'number'), `service entry port ${port.number} already defined`);
    portNames.add(port.name);
    portNumbers.add(port.number);
    if (port.targetPort !== 0) issues.check(field(p, 'targetPort'), checkPort(port.targetPort));
    issues.check(field(p, 'name'), checkPortName(port.name));
    issues.check(field(p, 'protocol'), checkProtocol(port.protocol));
    issues.check(field(p, 'number'), checkPort(port.number));
    if (se.addresses.length === 0 && !autoAllocation && (port.protocol === '' || port.protocol === 'TCP')) {
      issues.warn(p, 'addresses are required for ports serving TCP (or unset) protocol when IP Autoallocation is not enabled');
    }
  });

  const endpoints = field(spec, 'endpoints');
  switch (se.resolution) {
    case ServiceEntry_Resolution.NONE:
      if (se.endpoints.length > 0) issues.add(endpoints, 'no endpoints should be provided for resolution type none');
      if (se.workloadSelector)
        issues.warn(field(spec, 'workloadSelector'), 'workloadSelector should not be set when resolution mode is NONE');
      break;
    case ServiceEntry_Resolution.STATIC:
      // Static endpoints are used as they are: IPs or unix sockets, no hostnames.
      se.endpoints.forEach((ep, i) =>
        validateWorkloadEntryAt(issues, index(endpoints, i), ep, { allowFQDN: false, servicePorts: portNames }),
      );
      break;
    case ServiceEntry_Resolution.DNS:
    case ServiceEntry_Resolution.DNS_ROUND_ROBIN: {
      const name = ServiceEntry_Resolution[se.resolution];
      if (se.endpoints.length === 0) {
        se.hosts.forEach((h, i) => {
          if (checkFQDN(h))
            issues.add(index(field(spec, 'hosts'), i), `hosts must be FQDN if no endpoints are provided for resolution mode ${name}`);
        });
      }
      if (se.resolution === ServiceEntry_Resolution.DNS_ROUND_ROBIN && se.endpoints.length > 1) {
        issues.add(endpoints, `there must only be 0 or 1 endpoint for resolution mode ${name}`);
      }
      se.endpoints.forEach((ep, i) => {
        const p = index(endpoints, i);
        if (!isIPAddress(ep.address) && checkFQDN(ep.address)) {
          issues.add(field(p, 'address'), `endpoint address "${ep.address}" is not a valid FQDN or an IP address`);
        }
        for (const [portName, port] of Object.entries(ep.ports)) {
          const pp = key(field(p, 'ports'), portName);
          if (!portNames.has(portName)) issues.add(pp, `endpoint port ${portName} is not defined by the service entry`);
          issues.check(pp, checkPortName(portName));
          issues.check(pp, checkPort(port));
        }
        checkLabels(issues, field(p, 'labels'), ep.labels);
      });
      if (se.addresses.length > 0 && se.hosts.length > 1 && se.ports.some((port) => isTCPProtocol(parseProtocol(port.protocol)))) {
        issues.warn(
          field(spec, 'hosts'),
          'service entry can not have more than one host specified simultaneously with address and tcp port',
        );
      }
      break;
    }
    case ServiceEntry_Resolution.DYNAMIC_DNS:
      break; // endpoints are ignored in this mode
    default:
      issues.add(field(spec, 'resolution'), `unsupported resolution type ${se.resolution}`);
  }

  // Several hosts on a plain TCP port cannot be told apart (no Host header, no SNI).
  if (se.resolution !== ServiceEntry_Resolution.NONE && se.hosts.length > 1) {
    const opaque = se.ports.findIndex((port) => {
      const proto = parseProtocol(port.protocol);
      return !isHTTPProtocol(proto) && !isTLSProtocol(proto);
    });
    if (opaque >= 0) issues.add(index(field(spec, 'ports'), opaque), 'multiple hosts provided with non-HTTP, non-TLS ports');
  }

  checkExportTo(issues, field(spec, 'exportTo'), ctx.namespace, se.exportTo, true);
}
