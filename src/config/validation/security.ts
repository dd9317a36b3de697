/** security.istio.io checks as istiod's webhook runs them (PeerAuthentication, RequestAuthentication, AuthorizationPolicy). */
import type { AuthorizationPolicy } from '../../gen/security/v1beta1/authorization_policy_pb.js';
import type { PeerAuthentication } from '../../gen/security/v1beta1/peer_authentication_pb.js';
import type { RequestAuthentication } from '../../gen/security/v1beta1/request_authentication_pb.js';
import type { ObjectContext } from './context.js';
import type { Issues } from './issues.js';

export function validatePeerAuthentication(_pa: PeerAuthentication, _ctx: ObjectContext, _issues: Issues): void {}

export function validateRequestAuthentication(_ra: RequestAuthentication, _ctx: ObjectContext, _issues: Issues): void {}

export function validateAuthorizationPolicy(_ap: AuthorizationPolicy, _ctx: ObjectContext, _issues: Issues): void {}
