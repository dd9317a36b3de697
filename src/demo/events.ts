/**
 * What the demo tells about meshpilot while it runs, read from its JSON log lines: the last config
 * change and how long it took to reach the proxies, and a config error until it is resolved (the
 * last good version keeps serving meanwhile).
 */

export interface ControlPlaneState {
  /** `VirtualService/default/reviews: pushed, every proxy acknowledged in 102 ms`. */
  readonly lastChange?: string;
  /** meshpilot's message about an invalid file, until the errors are resolved. */
  readonly problem?: string;
}

type Json = Record<string, unknown>;

const str = (v: unknown): string => (typeof v === 'string' ? v : '');

export class ControlPlaneEvents {
  private state: ControlPlaneState = {};
  private pushedConfigs = '';

  constructor(private readonly onNotice: (text: string) => void = () => {}) {}

  current(): ControlPlaneState {
    return this.state;
  }

  /** One line of meshpilot's stderr (JSON; anything else is ignored). */
  line(text: string): void {
    let j: Json;
    try {
      const v: unknown = JSON.parse(text);
      if (typeof v !== 'object' || v === null) return;
      j = v as Json;
    } catch {
      return;
    }
    const msg = str(j.msg);
    if (msg === 'push' && Array.isArray(j.configs) && j.configs.length > 0) {
      this.pushedConfigs = j.configs.map(str).join(', ');
    } else if (msg === 'config change converged') {
      const what = this.pushedConfigs !== '' ? `${this.pushedConfigs}: ` : '';
      const change = `${what}applied, ${String(j.acked ?? 0)} of ${String(j.proxies ?? 0)} proxies acknowledged in ${Math.round(Number(j.ms ?? 0))} ms`;
      this.state = { ...this.state, lastChange: change };
      this.onNotice(`config change ${change}`);
    } else if (j.level === 'warn' && msg.startsWith('invalid config')) {
      this.state = { ...this.state, problem: `${msg} (the last good version keeps serving)` };
      this.onNotice(this.state.problem ?? msg);
    } else if (msg === 'config errors resolved' && Number(j.remaining ?? 0) === 0) {
      const { problem: _resolved, ...rest } = this.state;
      this.state = rest;
      this.onNotice('config errors resolved');
    }
  }
}
