/* global process, setTimeout */
/**
 * Preloaded (`--import`) into child processes started by the test helpers and the bench. The parent
 * holds the child's stdin pipe open; when the parent dies — even by SIGKILL — the pipe closes and
 * the child terminates itself, so no test run leaves an orphan behind. SIGTERM first (lets the
 * server shut down cleanly), then a hard exit if it is still around 3 s later. Plain JavaScript, so
 * a child running built code (no tsx) can preload it too.
 */
if (process.env.MESHPILOT_PARENT_WATCHDOG === '1' && !process.stdin.isTTY) {
  const bye = () => {
    setTimeout(() => process.exit(1), 3000).unref();
    process.kill(process.pid, 'SIGTERM');
  };
  process.stdin.on('end', bye);
  process.stdin.on('close', bye);
  process.stdin.on('error', bye);
  process.stdin.on('data', () => {});
  process.stdin.resume();
  // The pipe must not keep an otherwise finished process alive.
  process.stdin.unref?.();
}
