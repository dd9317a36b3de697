import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT } from '../../test/support/paths.js';

/** `--dist`: compiles the CLI as shipped (npm run build) and names its entry point, for plain node. */
export function buildCli(log: (msg: string) => void): string {
  log('building dist/ (npm run build)');
  execFileSync('npm', ['run', '-s', 'build'], { cwd: REPO_ROOT, stdio: 'inherit' });
  return join(REPO_ROOT, 'dist/src/cli/meshpilot.js');
}
