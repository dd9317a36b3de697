/** The public surface of src/xds: what other folders import (SURFACE in scripts/layers.ts). */
export { Connection } from './connection.js';
export { guardCredentials } from './credential-guard.js';
export { buildConfigDump, configDumpJson } from './debug/config-dump.js';
export { configz, registryz } from './debug/config-views.js';
export { decideHttpDebug, type HttpDebugAccessOptions, inScope, xdsDebugAccess } from './debug/debug-access.js';
export { registerDebugGenerators } from './debug/debug-generators.js';
export { createObservability } from './debug/observability.js';
export { parseChange, previewChange, type PreviewResult } from './debug/preview.js';
export { PropagationTracker } from './debug/propagation-tracker.js';
export { findConnection, syncStatus, syncz } from './debug/syncz.js';
export { DiscoveryServer, type ProxyLifecycle } from './discovery-server.js';
export { type Generator, GeneratorRegistry, type WatchedResourceView } from './generator.js';
export { pooledNameSetId } from './name-sets.js';
export { formatViolations, validateMessage } from './pgv/index.js';
export { resolvePushThrottle } from './push-queue.js';
export { joinResources, makeResource, type XdsResource } from './resource.js';
export { createStreamGate, type StreamGate, type StreamGateStats } from './stream-limiter.js';
export { XdsStats } from './xds-stats.js';
