/**
 * `node --import tsx upstream-main.ts '<json>'`: the test upstream DNS server as a process (run it
 * inside a network namespace). JSON: { host, port, records }. Prints `listening <port>` once bound,
 * then one JSON line per query it answers (`{"asked":name,"protocol":…}`); exits on SIGTERM or
 * when stdin closes (its test process went away).
 */
import { startUpstreamDns, type UpstreamRecords } from './upstream-server.js';

const spec = JSON.parse(process.argv[2] ?? '{}') as { host: string; port: number; records: UpstreamRecords };
const server = await startUpstreamDns(spec.host, spec.port, spec.records);
let reported = 0;
const report = setInterval(() => {
  for (; reported < server.asked.length; reported++)
    process.stdout.write(`${JSON.stringify({ asked: server.asked[reported]!.name, protocol: server.asked[reported]!.protocol })}\n`);
}, 20);
process.stdout.write(`listening ${server.port}\n`);
const stop = (): void => {
  clearInterval(report);
  void server.stop().then(() => process.exit(0));
};
process.on('SIGTERM', stop);
process.stdin.on('end', stop);
process.stdin.resume();
