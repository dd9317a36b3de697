/* global process, URL */
/**
 * Preloaded (`--import`) into a meshpilot child when a test wants to know which modules it loads:
 * registers module.register hooks that append the URL of every module the process resolves to the
 * file named by MESHPILOT_MODULE_LOG. Plain JavaScript, so built code (no tsx) can preload it too.
 */
import { register } from 'node:module';

if (process.env.MESHPILOT_MODULE_LOG) {
  register(new URL('./module-log-hooks.mjs', import.meta.url), { data: { file: process.env.MESHPILOT_MODULE_LOG } });
}
