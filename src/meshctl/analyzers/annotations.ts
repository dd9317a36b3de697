/**
 * istioctl's annotations.K8sAnalyzer over the metadata annotations of Namespaces, Services, Pods
 * and Deployments. An annotation in Istio's namespace (`*istio.io/…`, and the documented
 * `kubernetes.io/ingress.class`) that the catalogue does not know is IST0108; a deprecated one is
 * IST0135 (not for `sidecar.istio.io/inject` when the replacement label is there too); one that
 * belongs to other resource types is IST0107; a value the injector rejects is IST0125 (its own
 * checks, src/inject/validate.ts). Lines point at the annotation.
 */
import { annotationValueProblem } from '../../inject/validate.js';
import { MSG } from '../analyze/messages.js';
import { at, type Analyzer, type Report, type ResourceRef, type Snapshot } from '../analyze/model.js';
import { ISTIO_ANNOTATIONS } from './annotation-catalogue.js';
import { REVISION_LABEL, SIDECAR_INJECT, SIDECAR_STATUS_ANNOTATION } from '../../config/constants.js';

/** Set by istiod, the injector or a controller: never reported (istioctl's maturity.AlwaysIgnoredAnnotations). */
const ALWAYS_IGNORED = new Set([SIDECAR_STATUS_ANNOTATION, 'gateway.istio.io/controller-version', REVISION_LABEL]);

const DEPRECATION_EXTRA: Readonly<Record<string, string>> = { [SIDECAR_INJECT]: ' in favor of the "sidecar.istio.io/inject" label' };

function isIstioAnnotation(name: string): boolean {
  if (name === 'kubernetes.io/ingress.class') return true;
  return (name.split('/')[0] ?? '').endsWith('istio.io');
}

interface Annotated {
  readonly ref: ResourceRef;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
}

function check(s: Snapshot, kind: string, obj: Annotated, report: Report): void {
  const resource = obj.ref;
  for (const name of Object.keys(obj.annotations).sort()) {
    if (!isIstioAnnotation(name) || ALWAYS_IGNORED.has(name)) continue;
    const line = at(s, resource, `metadata.annotations.${name}`);
    const info = ISTIO_ANNOTATIONS.get(name);
    if (!info) {
      report({ type: MSG.UnknownAnnotation, resource, args: [name], ...line });
      continue;
    }
    if (info.deprecated && !(name === SIDECAR_INJECT && obj.labels[SIDECAR_INJECT] !== undefined)) {
      report({ type: MSG.DeprecatedAnnotation, resource, args: [name, DEPRECATION_EXTRA[name] ?? ''], ...line });
    }
    if (info.resources.includes('Any')) continue;
    const attachesTo: readonly string[] = info.resources;
    if (!attachesTo.includes(kind)) {
      report({ type: MSG.MisplacedAnnotation, resource, args: [name, attachesTo.join(', ')], ...line });
      continue;
    }
    // The injector's own checks of the values it reads (IST0125).
    const problem = annotationValueProblem(name, obj.annotations[name] ?? '');
    if (problem !== undefined) report({ type: MSG.InvalidAnnotation, resource, args: [name, problem], ...line });
  }
}

export const annotationsAnalyzer: Analyzer = {
  name: 'annotations.K8sAnalyzer',
  description: 'Checks for misplaced and invalid Istio annotations in Kubernetes resources',
  messages: [MSG.MisplacedAnnotation, MSG.UnknownAnnotation, MSG.DeprecatedAnnotation, MSG.InvalidAnnotation],
  analyze(s, report) {
    for (const ns of s.namespaces) check(s, 'Namespace', ns, report);
    for (const svc of s.services) check(s, 'Service', svc, report);
    for (const pod of s.pods) check(s, 'Pod', pod, report);
    for (const d of s.deployments) check(s, 'Deployment', d, report);
  },
};
