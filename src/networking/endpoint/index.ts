export { buildEndpointsFor } from './eds.js';
export { serviceAccounts, spiffeIdentity, tlsModeOf, TRANSPORT_SOCKET_MATCH_KEY } from './istio-endpoint.js';
