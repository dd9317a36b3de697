/**
 * A headless Chromium driven over the DevTools protocol on `--remote-debugging-pipe` (no
 * WebSocket, no dependency): the browser reads commands on its fd 3 and writes answers and events
 * on its fd 4, each a JSON message ended by a NUL byte. One page per `newPage`, attached with a
 * flat session; its console messages, exceptions and log entries are collected so a test can
 * assert that none was an error.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { trackChild } from './cleanup.js';

/** Where Debian's `chromium` package puts the browser (CHROMIUM overrides). */
const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'];

export function chromiumPath(): string | undefined {
  const fromEnv = process.env.CHROMIUM;
  if (fromEnv) return existsSync(fromEnv) ? fromEnv : undefined;
  return CANDIDATES.find((p) => existsSync(p));
}

/** Why a browser test cannot run here, or undefined when Chromium is installed. */
export function chromiumMissing(): string | undefined {
  return chromiumPath() === undefined
    ? `no Chromium: install the Debian package \`chromium\` (apt-get install -y chromium) or set CHROMIUM to a Chromium/Chrome binary; looked in ${CANDIDATES.join(', ')}`
    : undefined;
}

interface Pending {
  readonly resolve: (v: Record<string, unknown>) => void;
  readonly reject: (e: Error) => void;
  readonly method: string;
}

type EventHandler = (params: Record<string, unknown>, sessionId: string | undefined) => void;

/** A console message, exception or log entry the page produced. */
export interface PageProblem {
  readonly source: 'console' | 'exception' | 'log';
  readonly level: string;
  readonly text: string;
}

export class Browser {
  private readonly pending = new Map<number, Pending>();
  private readonly handlers = new Map<string, Set<EventHandler>>();
  private nextId = 0;
  private buffered = Buffer.alloc(0);
  private exited = false;
  /** Chromium's last stderr lines, for the error when it dies (a missing library, a bad flag). */
  private stderrTail: string[] = [];

  private constructor(
    private readonly child: ChildProcess,
    private readonly input: Writable,
    output: Readable,
    private readonly profileDir: string,
  ) {
    output.on('data', (chunk: Buffer) => this.onData(chunk));
    // A browser that died takes its pipes with it: the exit handler below reports that, not EPIPE.
    input.on('error', () => {});
    output.on('error', () => {});
    child.stderr?.setEncoding('utf8').on('data', (d: string) => {
      this.stderrTail.push(...d.split('\n').filter((l) => l.trim() !== ''));
      if (this.stderrTail.length > 20) this.stderrTail.splice(0, this.stderrTail.length - 20);
    });
    child.once('exit', (code, signal) => {
      this.exited = true;
      const why = `Chromium exited (code ${code}, signal ${signal}); its stderr ended with:\n${this.stderrTail.join('\n')}`;
      for (const p of this.pending.values()) p.reject(new Error(`${why}\n(during ${p.method})`));
      this.pending.clear();
    });
  }

  static launch(opts: { windowSize?: { width: number; height: number } } = {}): Browser {
    const exe = chromiumPath();
    if (!exe) throw new Error(chromiumMissing());
    const profileDir = mkdtempSync(join(tmpdir(), 'meshpilot-chromium-'));
    const size = opts.windowSize ?? { width: 1400, height: 1000 };
    const child = spawn(
      exe,
      [
        '--headless=new',
        '--remote-debugging-pipe',
        `--user-data-dir=${profileDir}`,
        // Containers and CI runners rarely allow Chromium's user-namespace sandbox.
        '--no-sandbox',
        '--disable-gpu',
        '--disable-dev-shm-usage',
        '--no-first-run',
        '--no-default-browser-check',
        '--disable-extensions',
        '--disable-background-networking',
        '--disable-component-update',
        '--hide-scrollbars',
        '--mute-audio',
        `--window-size=${size.width},${size.height}`,
        'about:blank',
      ],
      { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] },
    );
    trackChild(child);
    const input = child.stdio[3] as Writable;
    const output = child.stdio[4] as Readable;
    return new Browser(child, input, output, profileDir);
  }

  private onData(chunk: Buffer): void {
    this.buffered = Buffer.concat([this.buffered, chunk]);
    for (;;) {
      const end = this.buffered.indexOf(0);
      if (end < 0) return;
      const text = this.buffered.subarray(0, end).toString('utf8');
      this.buffered = this.buffered.subarray(end + 1);
      this.dispatch(JSON.parse(text) as Record<string, unknown>);
    }
  }

  private dispatch(msg: Record<string, unknown>): void {
    if (typeof msg.id === 'number') {
      const p = this.pending.get(msg.id);
      if (!p) return;
      this.pending.delete(msg.id);
      const err = msg.error as { message?: string; data?: string } | undefined;
      if (err) p.reject(new Error(`${p.method}: ${err.message ?? 'error'}${err.data ? ` (${err.data})` : ''}`));
      else p.resolve((msg.result ?? {}) as Record<string, unknown>);
      return;
    }
    const method = msg.method as string | undefined;
    if (!method) return;
    for (const h of this.handlers.get(method) ?? []) h((msg.params ?? {}) as Record<string, unknown>, msg.sessionId as string | undefined);
  }

  send(method: string, params: Record<string, unknown> = {}, sessionId?: string): Promise<Record<string, unknown>> {
    if (this.exited) return Promise.reject(new Error(`Chromium has exited (${method})`));
    const id = ++this.nextId;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, method });
      this.input.write(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }) + '\0');
    });
  }

  on(method: string, handler: EventHandler): () => void {
    let set = this.handlers.get(method);
    if (!set) {
      set = new Set();
      this.handlers.set(method, set);
    }
    set.add(handler);
    return () => set.delete(handler);
  }

  async newPage(size = { width: 1400, height: 1000 }): Promise<Page> {
    const { targetId } = (await this.send('Target.createTarget', { url: 'about:blank' })) as { targetId: string };
    const { sessionId } = (await this.send('Target.attachToTarget', { targetId, flatten: true })) as { sessionId: string };
    const page = new Page(this, sessionId);
    await page.enable(size);
    return page;
  }

  async close(): Promise<void> {
    if (!this.exited) {
      const gone = new Promise<void>((resolve) => this.child.once('exit', () => resolve()));
      await this.send('Browser.close').catch(() => undefined);
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 5000);
      await gone;
      clearTimeout(timer);
    }
    rmSync(this.profileDir, { recursive: true, force: true });
  }
}

export class Page {
  /** Every console message, exception and log entry (any level), in order. */
  readonly messages: PageProblem[] = [];

  constructor(
    private readonly browser: Browser,
    readonly sessionId: string,
  ) {
    const mine =
      (fn: (p: Record<string, unknown>) => void): EventHandler =>
      (p, s) => {
        if (s === sessionId) fn(p);
      };
    browser.on(
      'Runtime.consoleAPICalled',
      mine((p) => {
        const args = (p.args as { value?: unknown; description?: string }[] | undefined) ?? [];
        this.messages.push({ source: 'console', level: String(p.type), text: args.map((a) => a.description ?? String(a.value)).join(' ') });
      }),
    );
    browser.on(
      'Runtime.exceptionThrown',
      mine((p) => {
        const d = p.exceptionDetails as { text?: string; exception?: { description?: string } } | undefined;
        this.messages.push({ source: 'exception', level: 'error', text: d?.exception?.description ?? d?.text ?? 'exception' });
      }),
    );
    browser.on(
      'Log.entryAdded',
      mine((p) => {
        const e = p.entry as { level?: string; text?: string; url?: string } | undefined;
        this.messages.push({ source: 'log', level: e?.level ?? '?', text: `${e?.text ?? ''}${e?.url ? ` (${e.url})` : ''}` });
      }),
    );
  }

  send(method: string, params: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    return this.browser.send(method, params, this.sessionId);
  }

  async enable(size: { width: number; height: number }): Promise<void> {
    await Promise.all([this.send('Page.enable'), this.send('Runtime.enable'), this.send('Log.enable')]);
    await this.send('Emulation.setDeviceMetricsOverride', { width: size.width, height: size.height, deviceScaleFactor: 1, mobile: false });
  }

  /** Console errors and warnings, exceptions, and error/warning log entries (failed loads, CSP violations). */
  problems(): PageProblem[] {
    return this.messages.filter((m) => m.source === 'exception' || m.level === 'error' || m.level === 'warning' || m.level === 'assert');
  }

  /** Navigates and waits for the load event. */
  async goto(url: string, timeoutMs = 15_000): Promise<void> {
    let off: (() => void) | undefined;
    const loaded = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${url} did not load in ${timeoutMs} ms`)), timeoutMs);
      off = this.browser.on('Page.loadEventFired', (_p, s) => {
        if (s !== this.sessionId) return;
        clearTimeout(timer);
        resolve();
      });
    });
    try {
      const nav = (await this.send('Page.navigate', { url })) as { errorText?: string };
      if (nav.errorText) throw new Error(`navigating to ${url}: ${nav.errorText}`);
      await loaded;
    } finally {
      off?.();
    }
  }

  /** The value of a JavaScript expression in the page (awaited when it is a promise); throws on an exception. */
  async evaluate<T>(expression: string): Promise<T> {
    const r = (await this.send('Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true })) as {
      result?: { value?: unknown };
      exceptionDetails?: { text?: string; exception?: { description?: string } };
    };
    if (r.exceptionDetails)
      throw new Error(`evaluate ${expression}: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text ?? 'exception'}`);
    return r.result?.value as T;
  }

  /** Polls `expression` until it is truthy; returns its value. */
  async waitFor<T>(expression: string, opts: { timeoutMs?: number; description: string }): Promise<T> {
    const deadline = Date.now() + (opts.timeoutMs ?? 20_000);
    let last: unknown;
    for (;;) {
      last = await this.evaluate<unknown>(expression);
      if (last) return last as T;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${opts.description} (last value: ${JSON.stringify(last)})`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** A PNG of the whole page (beyond the viewport when `fullPage`), written to `file`. */
  async screenshot(file: string, opts: { fullPage?: boolean } = {}): Promise<void> {
    const params: Record<string, unknown> = { format: 'png', captureBeyondViewport: opts.fullPage ?? false };
    const { data } = (await this.send('Page.captureScreenshot', params)) as { data: string };
    writeFileSync(file, Buffer.from(data, 'base64'));
  }
}
