// Counts objects by constructor name in a V8 heap snapshot file: `node census-parse.mjs FILE NAME...`
// prints {"NAME": count, …}. A child process, so the parse's memory is never the measured process's.
import { readFileSync } from 'node:fs';
import process from 'node:process';

const [file, ...names] = process.argv.slice(2);
const snap = JSON.parse(readFileSync(file, 'utf8'));
const fields = snap.snapshot.meta.node_fields;
const width = fields.length;
const typeAt = fields.indexOf('type');
const nameAt = fields.indexOf('name');
const objectType = snap.snapshot.meta.node_types[0].indexOf('object');
const wanted = new Map();
snap.strings.forEach((s, i) => {
  if (names.includes(s)) wanted.set(i, s);
});
const out = Object.fromEntries(names.map((n) => [n, 0]));
for (let i = 0; i < snap.nodes.length; i += width) {
  if (snap.nodes[i + typeAt] !== objectType) continue;
  const name = wanted.get(snap.nodes[i + nameAt]);
  if (name !== undefined) out[name] += 1;
}
process.stdout.write(JSON.stringify(out));
