/**
 * istiod's ValidateWorkloadGroup: a template is required (its address is filled in at registration,
 * so it is not checked as a WorkloadEntry), metadata labels must be valid, and the readiness probe
 * must have non-negative timings and one usable method.
 */
import type { ReadinessProbe, WorkloadGroup } from '../../gen/networking/v1alpha3/workload_group_pb.js';
import { checkLabels, checkPort } from './common.js';
import type { ObjectContext } from './context.js';
import { field, type Issues } from './issues.js';

export function validateWorkloadGroup(spec: WorkloadGroup, _ctx: ObjectContext, issues: Issues): void {
  if (!spec.template) issues.add(field('spec', 'template'), 'template is required');
  if (spec.metadata) checkLabels(issues, field(field('spec', 'metadata'), 'labels'), spec.metadata.labels);
  if (spec.probe) validateReadinessProbe(spec.probe, field('spec', 'probe'), issues);
}

const TIMINGS = ['periodSeconds', 'initialDelaySeconds', 'timeoutSeconds', 'successThreshold', 'failureThreshold'] as const;

function validateReadinessProbe(probe: ReadinessProbe, path: string, issues: Issues): void {
  for (const t of TIMINGS) if (probe[t] < 0) issues.add(field(path, t), `${t} must be non-negative`);
  const m = probe.healthCheckMethod;
  switch (m.case) {
    case 'httpGet': {
      issues.check(field(field(path, 'httpGet'), 'port'), checkPort(m.value.port));
      const scheme = m.value.scheme;
      if (scheme !== '' && scheme !== 'HTTP' && scheme !== 'HTTPS')
        issues.add(field(field(path, 'httpGet'), 'scheme'), `httpGet.scheme must be one of "HTTPS", "HTTP", got "${scheme}"`);
      break;
    }
    case 'tcpSocket':
      issues.check(field(field(path, 'tcpSocket'), 'port'), checkPort(m.value.port));
      break;
    case 'grpc':
      issues.check(field(field(path, 'grpc'), 'port'), checkPort(m.value.port));
      break;
    case 'exec':
      if (m.value.command.length === 0) issues.add(field(field(path, 'exec'), 'command'), 'exec.command is required');
      break;
    default:
      issues.add(path, 'a probe needs one of httpGet, tcpSocket, grpc, exec');
  }
}
