// Compares two V8 heap snapshots by constructor: `node heap-diff.mjs BEFORE AFTER [TOP]` prints, for
// the constructors (object, closure and array class names; strings and code as their node type)
// whose self size grew most, count and self size in each and the difference, as JSON lines. Run in
// its own process: parsing a snapshot takes several times the heap it describes.
import { readFileSync } from 'node:fs';
import process from 'node:process';

function summarise(file) {
  const snap = JSON.parse(readFileSync(file, 'utf8'));
  const meta = snap.snapshot.meta;
  const width = meta.node_fields.length;
  const typeAt = meta.node_fields.indexOf('type');
  const nameAt = meta.node_fields.indexOf('name');
  const sizeAt = meta.node_fields.indexOf('self_size');
  const types = meta.node_types[0];
  const byName = new Map();
  for (let i = 0; i < snap.nodes.length; i += width) {
    const type = types[snap.nodes[i + typeAt]];
    // Objects, closures and arrays by class name; strings, code, hidden internals by their type.
    const key = type === 'object' || type === 'closure' || type === 'native' ? `${type}:${snap.strings[snap.nodes[i + nameAt]]}` : type;
    const e = byName.get(key) ?? { count: 0, size: 0 };
    e.count += 1;
    e.size += snap.nodes[i + sizeAt];
    byName.set(key, e);
  }
  return byName;
}

const [before, after, top = '25'] = process.argv.slice(2);
const a = summarise(before);
const b = summarise(after);
const rows = [];
for (const key of new Set([...a.keys(), ...b.keys()])) {
  const x = a.get(key) ?? { count: 0, size: 0 };
  const y = b.get(key) ?? { count: 0, size: 0 };
  rows.push({
    constructor: key,
    countBefore: x.count,
    countAfter: y.count,
    sizeBefore: x.size,
    sizeAfter: y.size,
    sizeDelta: y.size - x.size,
  });
}
rows.sort((p, q) => q.sizeDelta - p.sizeDelta);
const total = (m) => [...m.values()].reduce((n, e) => n + e.size, 0);
process.stdout.write(`${JSON.stringify({ totalBefore: total(a), totalAfter: total(b) })}\n`);
for (const r of rows.slice(0, Number(top))) process.stdout.write(`${JSON.stringify(r)}\n`);
