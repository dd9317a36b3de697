/** Public surface of src/agent: the node agent for `meshpilot agent`, and its CA client, which meshctl reuses. */
export { startAgent } from './agent.js';
export { AGENT_USAGE, parseAgentOptions, type AgentOptions } from './options.js';
export { caClient, controlPlaneChannel } from './ca-client.js';
