/** istiod's lease names: the namespace controller's (root-cert publisher) and every other singleton's. */
export const NAMESPACE_CONTROLLER_LEASE = 'istio-namespace-controller-election';
export const LEADER_LEASE = 'istio-leader';
