/**
 * The web console's routes on the HTTP (debug) port: the page, its one ES module and stylesheet
 * (plain files shipped in the package, served as they are: no build step), and the event stream.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { MeshError } from '../../util/errors.js';
import type { Handler, HandlerResult } from '../http-server.js';
import type { ConsoleHub } from './console-hub.js';

export const CONSOLE_PATH = '/console';

const ASSETS: readonly { readonly route: string; readonly file: string; readonly type: string }[] = [
  { route: CONSOLE_PATH, file: 'index.html', type: 'text/html; charset=utf-8' },
  { route: `${CONSOLE_PATH}/`, file: 'index.html', type: 'text/html; charset=utf-8' },
  { route: `${CONSOLE_PATH}/console.js`, file: 'console.js', type: 'text/javascript; charset=utf-8' },
  { route: `${CONSOLE_PATH}/console.css`, file: 'console.css', type: 'text/css; charset=utf-8' },
];

/**
 * The page loads only its own files and talks only to this server; no inline script, no frames
 * (a debug page that can POST to /debug/preview must not be framed by another site).
 */
const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
  'x-content-type-options': 'nosniff',
  'cache-control': 'no-cache',
};

/**
 * Where the assets are: beside this module (src/ under tsx, and dist/ once `npm pack` staged them:
 * scripts/stage-package-data.ts), else the source tree above dist/ (a build without staging, the
 * container image's COPY).
 */
export function consoleAssetDir(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const candidates = [path.join(here, 'assets'), path.resolve(here, '../../../../src/bootstrap/console/assets')];
  const found = candidates.find((d) => existsSync(path.join(d, 'index.html')));
  if (!found) throw new MeshError('NOT_FOUND', `the web console's files are not installed: looked in ${candidates.join(', ')}`);
  return found;
}

/** The console's handlers, to be served behind the same access rule as /debug/*. */
export function consoleRoutes(hub: ConsoleHub, assetDir: () => string = consoleAssetDir): Map<string, Handler> {
  const cache = new Map<string, string>();
  const asset =
    (file: string, type: string): Handler =>
    () => {
      let body = cache.get(file);
      if (body === undefined) {
        body = readFileSync(path.join(assetDir(), file), 'utf8');
        cache.set(file, body);
      }
      return { status: 200, body, contentType: type, headers: SECURITY_HEADERS };
    };
  const events: Handler = (req): HandlerResult => {
    if (req.method !== 'GET') return { status: 405, body: 'GET the console event stream\n' };
    return {
      status: 200,
      body: '',
      contentType: 'text/event-stream; charset=utf-8',
      headers: { 'cache-control': 'no-cache', 'x-accel-buffering': 'no', connection: 'keep-alive' },
      stream: (res) => hub.attach(res),
    };
  };
  return new Map<string, Handler>([
    ...ASSETS.map((a) => [a.route, asset(a.file, a.type)] as [string, Handler]),
    [`${CONSOLE_PATH}/events`, events],
  ]);
}
