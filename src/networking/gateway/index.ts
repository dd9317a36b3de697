export { gatewayContext, type GatewayContext } from './gateway-context.js';
export { buildGatewayListeners } from './gateway-listeners.js';
export { buildGatewayRoutes } from './gateway-routes.js';
export { buildGatewaySecrets } from './gateway-secrets.js';
export { credentialResourceName } from './gateway-tls.js';
export { gatewayRouteName, mergeGateways, type GatewayServer, type MergedGateway, type MergedServers } from './merged-gateway.js';
