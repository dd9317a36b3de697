export { buildEndpointsFor } from './eds.js';
export { buildLoadAssignment } from './endpoint-builder.js';
export { serviceAccounts, spiffeIdentity, tlsModeOf, TRANSPORT_SOCKET_MATCH_KEY } from './istio-endpoint.js';
