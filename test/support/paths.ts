import { fileURLToPath } from 'node:url';

/** The repository root (where package.json and src/ live). */
export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** URL of the preload that makes a child exit when its parent goes away. */
export const PARENT_WATCHDOG_URL = new URL('./parent-watchdog.mjs', import.meta.url).href;

/** Preload that logs every module a child resolves (MESHPILOT_MODULE_LOG names the file). */
export const MODULE_LOG_URL = new URL('./module-log.mjs', import.meta.url).href;

/** The meshpilot CLI entry point. */
export const MESHPILOT_CLI = fileURLToPath(new URL('../../src/cli/meshpilot.ts', import.meta.url));
