/**
 * istioctl's k8sgateway.SelectorAnalyzer (IST0166): an AuthorizationPolicy, RequestAuthentication,
 * WasmPlugin or Telemetry that picks Kubernetes Gateway pods (labelled `gateway.networking.k8s.io/gateway-name`)
 * by `selector` instead of `targetRef` — one message per picked gateway pod, naming its gateway.
 */
import type { PolicyTargetReference, WorkloadSelector } from '../../gen/type/v1beta1/selector_pb.js';
import { MSG } from '../analyze/messages.js';
import { configsOf, refOf, type Analyzer, type ResourceRef } from '../analyze/model.js';
import { labelsSubsetOf } from '../../config/index.js';
import { GATEWAY_NAME_LABEL } from '../../config/constants.js';

interface Policy {
  readonly ref: ResourceRef;
  readonly spec: { readonly selector?: WorkloadSelector | undefined; readonly targetRef?: PolicyTargetReference | undefined };
}

export const k8sGatewaySelectorAnalyzer: Analyzer = {
  name: 'k8sgateway.SelectorAnalyzer',
  description: 'Check that selectors are effective for Kubernetes gateway',
  messages: [MSG.IneffectiveSelector],
  analyze(s, report) {
    const gatewayPods = s.pods.filter((p) => p.labels[GATEWAY_NAME_LABEL] !== undefined);
    if (gatewayPods.length === 0) return;
    const policies: Policy[] = [
      ...configsOf(s, 'AuthorizationPolicy').map((c) => ({ ref: refOf(c), spec: c.spec })),
      ...configsOf(s, 'RequestAuthentication').map((c) => ({ ref: refOf(c), spec: c.spec })),
      ...configsOf(s, 'WasmPlugin').map((c) => ({ ref: refOf(c), spec: c.spec })),
      ...s.telemetries,
    ];
    for (const policy of policies) {
      const selector = policy.spec.selector;
      if (policy.spec.targetRef !== undefined || selector === undefined) continue;
      for (const pod of gatewayPods) {
        if (pod.ref.namespace !== policy.ref.namespace || !labelsSubsetOf(selector.matchLabels, pod.labels)) continue;
        report({ type: MSG.IneffectiveSelector, resource: policy.ref, args: [pod.labels[GATEWAY_NAME_LABEL]] });
      }
    }
  },
};
