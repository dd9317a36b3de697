export { freePort, freePorts } from './ports.js';
export { waitFor, quietWindow, type WaitOptions } from './wait.js';
export { tempDir, type TempDir } from './temp-dir.js';
export { writeYaml, writeFileAtomic, removeFile } from './yaml-files.js';
export { startMeshpilot, levelOf, type Meshpilot, type LogLine, type StartOptions, type ExitInfo } from './meshpilot-process.js';
export { REPO_ROOT } from './paths.js';
