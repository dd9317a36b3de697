import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { REPO_ROOT } from '../meshctl/test-io.js';
import { packageVersion } from '../util/version.js';
import { COMMANDS, EXIT_USAGE, flagError, runMeshpilot, type Runners } from './dispatch.js';

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  /** What reached a runner: its name and what it was handed. */
  ran: { name: string; arg: unknown }[];
}

/** meshpilot in-process: the long-running commands are recorded, not started. */
async function meshpilot(...argv: string[]): Promise<Run> {
  let stdout = '';
  let stderr = '';
  const ran: Run['ran'] = [];
  const record =
    (name: string) =>
    (arg: unknown): Promise<number> => {
      ran.push({ name, arg });
      return Promise.resolve(0);
    };
  const runners: Runners = { discovery: record('discovery'), agent: record('agent'), iptables: record('iptables'), cni: record('cni') };
  const code = await runMeshpilot(argv, { stdout: (s) => (stdout += s), stderr: (s) => (stderr += s), env: {} }, runners);
  return { code, stdout, stderr, ran };
}

describe('meshpilot command line', () => {
  it('no arguments, --help, -h and help: the command list on stdout, exit 0', async () => {
    for (const argv of [[], ['--help'], ['-h'], ['help']]) {
      const r = await meshpilot(...argv);
      assert.equal(r.code, 0, argv.join(' '));
      assert.equal(r.stderr, '');
      assert.match(r.stdout, /^Usage:\n {2}meshpilot \[command\]$/m);
      for (const c of COMMANDS) assert.match(r.stdout, new RegExp(`^ {2}${c.name} +\\S`, 'm'), c.name);
      assert.match(r.stdout, /Use "meshpilot \[command\] --help" for more information about a command\./);
    }
  });

  it('every command and subcommand answers --help and -h with its own usage on stdout, exit 0, running nothing', async () => {
    const cases: [string[], RegExp][] = [
      [['discovery'], /^usage: meshpilot discovery .*--configDir/],
      [['agent'], /^usage: meshpilot agent /],
      [['proxy'], /^usage: meshpilot proxy /],
      [['proxy', 'sidecar'], /^usage: meshpilot proxy /],
      [['iptables'], /^usage: meshpilot iptables /],
      [['istio-iptables'], /^usage: meshpilot iptables /],
      [['cni'], /^usage: meshpilot cni install [\s\S]*meshpilot cni uninstall/],
      [['cni', 'install'], /^usage: meshpilot cni install /],
      [['cni', 'uninstall'], /^usage: meshpilot cni install /],
      [['version'], /^usage: meshpilot version /],
      [['demo'], /^usage: meshpilot demo .*--configDir/],
    ];
    for (const [argv, usage] of cases) {
      for (const flag of ['--help', '-h']) {
        const r = await meshpilot(...argv, flag);
        const what = [...argv, flag].join(' ');
        assert.equal(r.code, 0, what);
        assert.match(r.stdout, usage, what);
        assert.equal(r.stderr, '', what);
        assert.deepEqual(r.ran, [], what);
      }
    }
    // A flag before --help is not parsed first (istiod's --help wins over a bad value too).
    assert.equal((await meshpilot('discovery', '--keepaliveInterval', 'soon', '--help')).code, 0);
    assert.match((await meshpilot('help', 'discovery')).stdout, /^usage: meshpilot discovery /);
  });

  it("--version and version print istioctl's client version line; -s the bare version; -o json|yaml the document", async () => {
    const v = packageVersion();
    for (const argv of [['--version'], ['version']]) {
      const r = await meshpilot(...argv);
      assert.deepEqual([r.code, r.stdout, r.stderr], [0, `client version: ${v}\n`, ''], argv.join(' '));
    }
    assert.equal((await meshpilot('version', '--short')).stdout, `${v}\n`);
    assert.equal((await meshpilot('version', '-s')).stdout, `${v}\n`);
    assert.deepEqual(JSON.parse((await meshpilot('version', '-o', 'json')).stdout), { clientVersion: { version: v } });
    assert.equal((await meshpilot('--version', '-o', 'yaml')).stdout, `clientVersion:\n  version: ${v}\n`);
    const bad = await meshpilot('version', '-o', 'xml');
    assert.equal(bad.code, EXIT_USAGE);
    assert.match(bad.stderr, /^Error: meshpilot version: --output must be json or yaml, not "xml"\n/);
  });

  it('an unknown command: one line naming it and the commands, exit 64', async () => {
    const r = await meshpilot('bogus', '--configDir', 'x');
    assert.equal(r.code, EXIT_USAGE);
    assert.equal(r.stdout, '');
    const [first, second, rest] = r.stderr.split('\n');
    assert.equal(
      first,
      'Error: unknown command "bogus" for "meshpilot" (commands: discovery, agent, proxy, iptables, cni, demo, version, istio-iptables)',
    );
    assert.equal(second, "Run 'meshpilot --help' for usage.");
    assert.equal(rest, '');
    assert.match((await meshpilot('help', 'bogus')).stderr, /^Error: unknown command "bogus" for "meshpilot"/);
    const sub = await meshpilot('cni', 'reinstall');
    assert.equal(sub.code, EXIT_USAGE);
    assert.match(
      sub.stderr,
      /^Error: meshpilot cni: unknown command "reinstall" \(commands: install, uninstall\)\nRun 'meshpilot cni --help' for usage\.\n$/,
    );
    assert.match((await meshpilot('cni')).stderr, /^Error: meshpilot cni: a subcommand is required \(install, uninstall\)\n/);
  });

  it('an unknown flag names itself (cobra\'s "unknown flag: --x"), with the command, exit 64', async () => {
    const cases: [string[], string][] = [
      [['--bogus'], "Error: unknown flag: --bogus\nRun 'meshpilot --help' for usage.\n"],
      [['--bogus=1'], "Error: unknown flag: --bogus\nRun 'meshpilot --help' for usage.\n"],
      [['discovery', '--bogus'], "Error: meshpilot discovery: unknown flag: --bogus\nRun 'meshpilot discovery --help' for usage.\n"],
      [['agent', '--nope=1'], "Error: meshpilot agent: unknown flag: --nope\nRun 'meshpilot agent --help' for usage.\n"],
      [['version', '--remote'], "Error: meshpilot version: unknown flag: --remote\nRun 'meshpilot version --help' for usage.\n"],
      [['demo', '--bogus'], "Error: meshpilot demo: unknown flag: --bogus\nRun 'meshpilot demo --help' for usage.\n"],
    ];
    for (const [argv, stderr] of cases) {
      const r = await meshpilot(...argv);
      assert.deepEqual([r.code, r.stderr, r.ran], [EXIT_USAGE, stderr, []], argv.join(' '));
    }
    const proxy = await meshpilot('proxy', 'sidecar', '--bogus', '1');
    assert.equal(proxy.code, EXIT_USAGE);
    assert.match(proxy.stderr, /^Error: meshpilot proxy: pilot-agent proxy flag --bogus is not supported/);
    // A bad value names its flag too.
    assert.match(
      (await meshpilot('discovery', '--configDir')).stderr,
      /^Error: meshpilot discovery: Option '--configDir <value>' argument missing\n/,
    );
  });

  it("flagError turns parseArgs' unknown-option error into cobra's words and leaves the rest", () => {
    const unknown = Object.assign(new TypeError("Unknown option '-q'"), { code: 'ERR_PARSE_ARGS_UNKNOWN_OPTION' });
    assert.equal(flagError(unknown), 'unknown flag: -q');
    assert.equal(flagError(new Error('--caKeyType: "DSA" is not ECDSA or RSA')), '--caKeyType: "DSA" is not ECDSA or RSA');
  });

  it('valid flags reach the runners parsed (discovery, agent, proxy as agent flags, iptables and cni as they are)', async () => {
    const d = await meshpilot('discovery', '--configDir', '/tmp/cfg', '--httpAddr', '127.0.0.1:0');
    assert.equal(d.code, 0);
    assert.equal(d.ran[0]?.name, 'discovery');
    assert.equal((d.ran[0]?.arg as { configDir: string; httpAddr: string }).configDir, '/tmp/cfg');
    const p = await meshpilot('proxy', 'router', '--domain', 'ns.svc.example.org');
    assert.equal(p.ran[0]?.name, 'agent');
    assert.equal((p.ran[0]?.arg as { proxyType: string }).proxyType, 'router');
    assert.deepEqual((await meshpilot('istio-iptables', '-p', '15001')).ran, [{ name: 'iptables', arg: ['-p', '15001'] }]);
    assert.deepEqual((await meshpilot('cni', 'uninstall', '--cni-net-dir', '/x')).ran, [
      { name: 'cni', arg: ['uninstall', '--cni-net-dir', '/x'] },
    ]);
  });

  it('the bin: exit codes and streams from the process', () => {
    const bin = (...args: string[]) =>
      spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/meshpilot.ts', ...args], { cwd: REPO_ROOT, encoding: 'utf8' });
    const version = bin('--version');
    assert.deepEqual([version.status, version.stdout], [0, `client version: ${packageVersion()}\n`]);
    const help = bin('discovery', '--help');
    assert.equal(help.status, 0);
    assert.match(help.stdout, /^usage: meshpilot discovery /);
    const bogus = bin('bogus');
    assert.equal(bogus.status, EXIT_USAGE);
    assert.match(bogus.stderr, /^Error: unknown command "bogus" for "meshpilot"/);
  });
});
