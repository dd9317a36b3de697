/** WorkloadEntry checks, shared with ServiceEntry endpoints (which are WorkloadEntry messages). */
import type { WorkloadEntry } from '../../gen/networking/v1alpha3/workload_entry_pb.js';
import { checkFQDN, checkLabels, checkPort, checkPortName, checkUnixAddress, isIPAddress } from './common.js';
import type { ObjectContext } from './context.js';
import { field, key, type Issues } from './issues.js';

const UNIX_PREFIX = 'unix://';

export interface WorkloadEntryRules {
  /** Hostnames are allowed (DNS resolution); otherwise the address must be an IP or unix socket. */
  readonly allowFQDN: boolean;
  /** The ServiceEntry's port names, when the entry is one of its endpoints. */
  readonly servicePorts?: ReadonlySet<string>;
}

export function validateWorkloadEntryAt(issues: Issues, path: string, we: WorkloadEntry, rules: WorkloadEntryRules): void {
  const addr = we.address;
  const addrPath = field(path, 'address');
  if (addr === '' && we.network === '') issues.add(addrPath, 'address is required');
  else if (addr === '') issues.warn(addrPath, `address is unset with network ${JSON.stringify(we.network)}`);
  let unix = false;
  if (addr.startsWith(UNIX_PREFIX)) {
    unix = true;
    issues.check(addrPath, checkUnixAddress(addr.slice(UNIX_PREFIX.length)));
    if (Object.keys(we.ports).length > 0) issues.add(field(path, 'ports'), `unix endpoint ${addr} must not include ports`);
  } else if (addr !== '' && !isIPAddress(addr)) {
    if (!rules.allowFQDN) issues.add(addrPath, `endpoint address "${addr}" is not a valid IP address`);
    else if (checkFQDN(addr)) issues.add(addrPath, `endpoint address "${addr}" is not a valid FQDN or an IP address`);
  }
  for (const [name, port] of Object.entries(we.ports)) {
    const p = key(field(path, 'ports'), name);
    if (rules.servicePorts && !rules.servicePorts.has(name)) issues.add(p, `endpoint port ${name} is not defined by the service entry`);
    issues.check(p, checkPortName(name));
    issues.check(p, checkPort(port));
  }
  checkLabels(issues, field(path, 'labels'), we.labels);
  if (unix && rules.servicePorts && rules.servicePorts.size !== 1) {
    issues.add(addrPath, 'exactly 1 service port required for unix endpoints');
  }
}

export function validateWorkloadEntry(we: WorkloadEntry, _ctx: ObjectContext, issues: Issues): void {
  // Without its ServiceEntry we cannot tell DNS from STATIC, so hostnames are accepted (as istiod does).
  validateWorkloadEntryAt(issues, 'spec', we, { allowFQDN: true });
}
