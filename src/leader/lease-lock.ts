/**
 * A coordination.k8s.io/v1 Lease as a lock record (client-go's LeaseLock): read, create, and
 * update guarded by the resourceVersion last read, so two candidates racing for an expired lease
 * cannot both win — the second update fails with 409 Conflict.
 */
import type { V1Lease, V1LeaseSpec } from '@kubernetes/client-node';
import { kubeClient, microTime, statusCodeOf, type KubeClient, type KubeConfig } from '../kube/index.js';

export interface LeaseRecord {
  /** '' when released. */
  readonly holderIdentity: string;
  readonly leaseDurationSeconds: number;
  /** As the API server wrote them (RFC 3339 with microseconds); compared, never parsed. */
  readonly acquireTime: string;
  readonly renewTime: string;
  readonly leaseTransitions: number;
}

/** What was read: the record and the resourceVersion an update must name. */
export interface ObservedLease {
  readonly record: LeaseRecord;
  readonly resourceVersion: string;
}

export type WriteOutcome =
  | { readonly ok: true; readonly lease: ObservedLease }
  | { readonly ok: false; readonly conflict: boolean; readonly status: number | undefined; readonly error: unknown };

export interface RecordToWrite {
  readonly holderIdentity: string;
  readonly leaseDurationSeconds: number;
  readonly acquireTime: Date | string;
  readonly renewTime: Date;
  readonly leaseTransitions: number;
}

const timeText = (t: unknown): string => (t instanceof Date ? microTime(t) : typeof t === 'string' ? t : '');

export function leaseRecordOf(lease: V1Lease): ObservedLease {
  const spec = lease.spec ?? {};
  return {
    record: {
      holderIdentity: spec.holderIdentity ?? '',
      leaseDurationSeconds: spec.leaseDurationSeconds ?? 0,
      acquireTime: timeText(spec.acquireTime),
      renewTime: timeText(spec.renewTime),
      leaseTransitions: spec.leaseTransitions ?? 0,
    },
    resourceVersion: lease.metadata?.resourceVersion ?? '',
  };
}

/** A Lease's times as written: MicroTime text (a string read from the server goes back as it was). */
const leaseTime = (t: Date | string): string => (typeof t === 'string' ? t : microTime(t));

export class LeaseLock {
  readonly #api: KubeClient;
  readonly #collection: string;

  constructor(
    kubeConfig: KubeConfig,
    readonly namespace: string,
    readonly name: string,
  ) {
    this.#api = kubeClient(kubeConfig);
    this.#collection = `/apis/coordination.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/leases`;
  }

  get #path(): string {
    return `${this.#collection}/${encodeURIComponent(this.name)}`;
  }

  /** The lease, or undefined when it does not exist; other errors throw. */
  async get(): Promise<ObservedLease | undefined> {
    try {
      return leaseRecordOf(await this.#api.get<V1Lease>(this.#path));
    } catch (err) {
      if (statusCodeOf(err) === 404) return undefined;
      throw err;
    }
  }

  create(record: RecordToWrite): Promise<WriteOutcome> {
    return this.#write(() =>
      this.#api.create<V1Lease>(this.#collection, {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: this.name, namespace: this.namespace },
        spec: this.#spec(record),
      }),
    );
  }

  /** Replaces the record if the lease is still at `resourceVersion`. */
  update(resourceVersion: string, record: RecordToWrite): Promise<WriteOutcome> {
    return this.#write(() =>
      this.#api.update<V1Lease>(this.#path, {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: { name: this.name, namespace: this.namespace, resourceVersion },
        spec: this.#spec(record),
      }),
    );
  }

  /** The spec as JSON (V1LeaseSpec types its times as Date; the wire carries MicroTime text). */
  #spec(r: RecordToWrite): Omit<V1LeaseSpec, 'acquireTime' | 'renewTime'> & { acquireTime: string; renewTime: string } {
    return {
      holderIdentity: r.holderIdentity,
      leaseDurationSeconds: r.leaseDurationSeconds,
      acquireTime: leaseTime(r.acquireTime),
      renewTime: leaseTime(r.renewTime),
      leaseTransitions: r.leaseTransitions,
    };
  }

  async #write(call: () => Promise<V1Lease>): Promise<WriteOutcome> {
    try {
      return { ok: true, lease: leaseRecordOf(await call()) };
    } catch (err) {
      const status = statusCodeOf(err);
      return { ok: false, conflict: status === 409, status, error: err };
    }
  }
}
