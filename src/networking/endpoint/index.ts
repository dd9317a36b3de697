export { buildEndpointsFor } from './eds.js';
export { buildLoadAssignment } from './endpoint-builder.js';
export { serviceAccounts, spiffeIdentity, tlsModeOf, TLS_MODE_LABEL, TRANSPORT_SOCKET_MATCH_KEY } from './istio-endpoint.js';
