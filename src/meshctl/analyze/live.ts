/**
 * `meshctl analyze -R -A <dir>` as a function, for the control plane's web console: the same
 * loader, analyzers, ordering and message text, over the directory meshpilot serves. The CLI hands
 * it to `meshpilot discovery` (bootstrap may not import meshctl: scripts/layers.ts).
 */
import { formatConfigError } from '../../config/index.js';
import { errorMessage } from '../../util/errors.js';
import { ALL_ANALYZERS } from '../analyzers/index.js';
import { messageText, originName, reference } from './format.js';
import { loadInputs } from './loader.js';
import { runAnalyzers } from './run.js';

export interface LiveAnalysisMessage {
  readonly level: 'Error' | 'Warning' | 'Info';
  readonly code: string;
  readonly origin: string;
  readonly reference?: string;
  readonly message: string;
}

export interface LiveAnalysis {
  readonly scope: string;
  readonly messages: readonly LiveAnalysisMessage[];
  readonly errors: readonly string[];
}

/** Every namespace of `dir` (recursively), with istioctl's stand-ins for a default install, as files-only `meshctl analyze` does. */
export async function analyzeConfigDir(dir: string, rootNamespace: string): Promise<LiveAnalysis> {
  const { snapshot, parseErrors } = await loadInputs({
    args: [dir],
    recursive: true,
    defaultNamespace: 'default',
    cwd: process.cwd(),
    rootNamespace,
    defaultResources: true,
  });
  const errors = parseErrors.map((e) => `failed to parse ${formatConfigError(e)}`);
  const msgs = runAnalyzers(ALL_ANALYZERS, snapshot, {
    namespace: undefined,
    suppress: [],
    onAnalyzerError: (name, err) => errors.push(`analyzer ${name} failed: ${errorMessage(err)}`),
  });
  return {
    scope: `meshctl analyze -R -A ${dir}`,
    errors,
    messages: msgs.map((m) => {
      const ref = reference(m);
      return { level: m.type.level, code: m.type.code, origin: originName(m), ...(ref ? { reference: ref } : {}), message: messageText(m) };
    }),
  };
}
