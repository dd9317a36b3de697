/**
 * istioctl's install progress on stderr: one `✔ Istiod installed` line per component when its last
 * object is applied and ready. On a terminal a status line below them is rewritten in place
 * (`- Processing resources for Istiod. Waiting for Deployment istio-system/istiod`); otherwise
 * each wait is one plain line, so logs stay readable.
 */
import { describeRef, type ObjectRef } from './objects.js';

export interface ProgressSink {
  write(s: string): unknown;
  readonly isTTY?: boolean;
}

const CLEAR_LINE = '\r\x1b[K';

export class Progress {
  private readonly pending = new Map<string, number>();
  private readonly started = new Set<string>();
  private status = '';

  constructor(private readonly out: ProgressSink) {}

  /** Announces how many objects each component (by title) will apply. */
  plan(counts: ReadonlyMap<string, number>): void {
    for (const [title, n] of counts) this.pending.set(title, n);
  }

  /** One object of `title` applied (and waited on, if it is waited on). */
  applied(title: string): void {
    this.started.add(title);
    const left = (this.pending.get(title) ?? 1) - 1;
    this.pending.set(title, left);
    if (left === 0) {
      this.started.delete(title);
      this.line(`✔ ${title} installed`);
    } else this.redraw('');
  }

  waiting(title: string, ref: ObjectRef, reason: string): void {
    this.started.add(title);
    const what = `Waiting for ${describeRef(ref)} (${reason})`;
    if (this.out.isTTY === true) this.redraw(what);
    else if (this.status !== what) {
      this.status = what;
      this.out.write(`- ${what}\n`);
    }
  }

  failed(title: string, message: string): void {
    this.line(`✘ ${title} encountered an error: ${message}`);
  }

  done(text: string): void {
    this.line(`✔ ${text}`);
  }

  /** A finished line above the status line (which is redrawn under it on a terminal). */
  private line(text: string): void {
    if (this.out.isTTY === true) {
      this.out.write(`${CLEAR_LINE}${text}\n`);
      this.redraw('');
    } else this.out.write(`${text}\n`);
  }

  private redraw(detail: string): void {
    if (this.out.isTTY !== true) return;
    const names = [...this.started];
    const text = names.length === 0 ? '' : `- Processing resources for ${names.join(', ')}.${detail ? ` ${detail}` : ''}`;
    this.out.write(`${CLEAR_LINE}${text}`);
  }
}
