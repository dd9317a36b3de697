import { fromJson, type JsonValue } from '@bufbuild/protobuf';
import { AuthorizationPolicySchema } from '../../gen/security/v1beta1/authorization_policy_pb.js';
import { RequestAuthenticationSchema } from '../../gen/security/v1beta1/request_authentication_pb.js';
import type { Config } from '../../config/index.js';

// Test-only builders: Istio objects from their YAML/JSON spec, as the config store hands them over.

function meta<K extends 'AuthorizationPolicy' | 'RequestAuthentication'>(
  kind: K,
  namespace: string,
  name: string,
  annotations: Record<string, string>,
) {
  return { kind, name, namespace, labels: {}, annotations, resourceVersion: '1' };
}

export function authzPolicy(
  namespace: string,
  name: string,
  spec: JsonValue,
  annotations: Record<string, string> = {},
): Config<'AuthorizationPolicy'> {
  return { meta: meta('AuthorizationPolicy', namespace, name, annotations), spec: fromJson(AuthorizationPolicySchema, spec) };
}

export function requestAuthn(namespace: string, name: string, spec: JsonValue): Config<'RequestAuthentication'> {
  return { meta: meta('RequestAuthentication', namespace, name, {}), spec: fromJson(RequestAuthenticationSchema, spec) };
}
