/**
 * The console's config health: the objects the config sources rejected (file:line, field, error;
 * their last good version keeps serving) and the analyzer messages `meshctl analyze` prints for the
 * same config.
 */
import type { ConfigError } from '../../config/index.js';

export interface RejectedObject {
  /** `file:line`, or the API origin. */
  readonly where: string;
  readonly object: string;
  readonly path?: string;
  readonly message: string;
}

/** One analyzer message, as `meshctl analyze -o json` prints it. */
export interface AnalysisMessage {
  readonly level: 'Error' | 'Warning' | 'Info';
  readonly code: string;
  /** `Kind namespace/name`. */
  readonly origin: string;
  /** `file:line`, when read from a file. */
  readonly reference?: string;
  readonly message: string;
}

export interface ConfigAnalysis {
  /** What was analyzed (e.g. the config directory). */
  readonly scope: string;
  readonly messages: readonly AnalysisMessage[];
  /** Files that could not be read or parsed, and analyzers that failed. */
  readonly errors: readonly string[];
}

/**
 * Runs the analyzers over the current config. The CLI provides it (the analyzers live with meshctl,
 * which bootstrap may not import: scripts/layers.ts); without it the console says analysis is off.
 */
export type ConfigAnalyzer = () => Promise<ConfigAnalysis>;

export interface HealthView {
  readonly rejected: readonly RejectedObject[];
  readonly rejectedTotal: number;
  readonly analysis?: ConfigAnalysis;
  /** Why there is no analysis (not configured, failed, running). */
  readonly analysisNote?: string;
  readonly analyzedAt?: number;
}

/** Rejected objects shown (the store already bounds errors per file). */
const REJECTED_SHOWN = 200;

export function rejectedObjects(errors: ReadonlyMap<string, readonly ConfigError[]>): { list: RejectedObject[]; total: number } {
  const all: RejectedObject[] = [];
  for (const list of errors.values()) {
    for (const e of list) {
      all.push({
        where: e.origin.line !== undefined ? `${e.origin.file}:${e.origin.line}` : e.origin.file,
        object: e.kind ? `${e.kind} ${e.namespace ?? '?'}/${e.name ?? '?'}` : '',
        ...(e.path ? { path: e.path } : {}),
        message: e.message,
      });
    }
  }
  all.sort((a, b) => a.where.localeCompare(b.where, undefined, { numeric: true }));
  return { list: all.slice(0, REJECTED_SHOWN), total: all.length };
}
