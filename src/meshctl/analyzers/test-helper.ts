/** Test support: runs one analyzer over scenario files, returning istioctl log lines (not a test file itself). */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { logLine } from '../analyze/format.js';
import { loadInputs } from '../analyze/loader.js';
import type { Analyzer } from '../analyze/model.js';
import { runAnalyzers } from '../analyze/run.js';
import { ISTIO_SYSTEM_NAMESPACE } from '../../config/constants.js';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** Scenario files live in testdata/meshctl/analyze/<dir>/. */
export const scenario = (dir: string, file: string): string => `testdata/meshctl/analyze/${dir}/${file}`;

export async function analyzeLines(
  analyzer: Analyzer,
  files: readonly string[],
  namespace: string | undefined = undefined,
): Promise<string[]> {
  const { snapshot, parseErrors } = await loadInputs({
    args: files,
    recursive: false,
    defaultNamespace: 'default',
    cwd: REPO_ROOT,
    rootNamespace: ISTIO_SYSTEM_NAMESPACE,
  });
  if (parseErrors.length > 0) throw new Error(`scenario does not parse: ${JSON.stringify(parseErrors)}`);
  return runAnalyzers([analyzer], snapshot, { namespace, suppress: [] }).map((m) => logLine(m, false));
}
