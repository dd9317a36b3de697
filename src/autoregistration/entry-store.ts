/**
 * The WorkloadEntries the auto-registration controller writes, as plain JSON objects, and the
 * store it writes them through: the API server in cluster mode (kube-store.ts), an in-memory
 * config source beside the files otherwise (memory-store.ts). istiod writes through its CRD
 * client; there is no API server to write to in file mode.
 */
import type { JsonObject } from '@bufbuild/protobuf';
import type { IstioCondition } from '../config/index.js';

/** A WorkloadEntry as the controller reads and writes it. */
export interface EntryObject {
  readonly namespace: string;
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
  /** The WorkloadEntry spec as proto JSON (`address`, `ports`, `serviceAccount` …). */
  readonly spec: JsonObject;
  /** `status.conditions` (the `Healthy` condition). */
  readonly conditions: readonly IstioCondition[];
  /** The WorkloadGroup the entry was made from (its controller ownerReference; the API server's GC removes the entry with it). */
  readonly owner?: { readonly name: string; readonly uid?: string };
}

export interface WorkloadEntryStore {
  /** `memory` (file mode: file-defined entries are not in it and cannot be written) or `kube`. */
  readonly kind: 'memory' | 'kube';
  get(namespace: string, name: string): Promise<EntryObject | undefined>;
  list(): Promise<readonly EntryObject[]>;
  /** Creates the entry; false when one of that name exists already. */
  create(entry: EntryObject): Promise<boolean>;
  /**
   * Reads the current entry, applies `change` and writes the result (metadata and spec, then
   * status if the conditions differ), reading again on a write conflict. `change` returns
   * undefined to leave the entry as it is. False when nothing was written (no entry, or declined).
   */
  update(namespace: string, name: string, change: (current: EntryObject) => EntryObject | undefined): Promise<boolean>;
  /** Deletes the entry if `still` holds for its current version; false when it did not (or there was none). */
  remove(namespace: string, name: string, still: (current: EntryObject) => boolean): Promise<boolean>;
}

/** The entry's time annotations: RFC 3339 in UTC (istiod writes Go's RFC3339Nano, which reads the same). */
export function formatTime(ms: number): string {
  return new Date(ms).toISOString();
}

/** Milliseconds of an RFC 3339 time (nanoseconds cut to milliseconds); undefined when absent or unreadable. */
export function parseTime(text: string | undefined): number | undefined {
  if (text === undefined || text === '') return undefined;
  const ms = Date.parse(text.replace(/(\.\d{3})\d+/, '$1'));
  return Number.isFinite(ms) ? ms : undefined;
}

/** Retries `attempt` on failure with istiod's controller-queue backoff (5 ms × 2ⁿ, five attempts); the last error is thrown. */
export async function withRetries<T>(attempt: () => Promise<T>, sleep: (ms: number) => Promise<void>, attempts = 5): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await attempt();
    } catch (err) {
      if (i + 1 >= attempts) throw err;
      await sleep(5 * 2 ** i);
    }
  }
}
