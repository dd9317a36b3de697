/**
 * Every relative link in README.md and docs/*.md points at a file of the repository, and a link
 * with an anchor (`file.md#section`, `#section`) at a heading of that file, spelled as GitHub
 * spells heading anchors. Links to other sites are not checked.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { REPO_ROOT } from '../support/paths.js';

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens. */
export function headingAnchor(text: string): string {
  return text
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

/** Markdown text without fenced code blocks (a `#` line in a shell example is no heading). */
function withoutCodeBlocks(markdown: string): string[] {
  const out: string[] = [];
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    else if (!fenced) out.push(line);
  }
  return out;
}

/** The anchors of a Markdown file's headings (GitHub numbers repeated ones: `x`, `x-1`, …). */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of withoutCodeBlocks(markdown)) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const base = headingAnchor(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** The targets of inline links `[text](target)` outside code blocks and code spans. */
export function linkTargets(markdown: string): string[] {
  const out: string[] = [];
  for (const line of withoutCodeBlocks(markdown)) {
    const text = line.replace(/`[^`]*`/g, '');
    for (const m of text.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) out.push(m[1]!);
  }
  return out;
}

const isExternal = (target: string): boolean => /^[a-z][a-z0-9+.-]*:/i.test(target);

function markdownFiles(): string[] {
  const docs = join(REPO_ROOT, 'docs');
  return [
    join(REPO_ROOT, 'README.md'),
    ...readdirSync(docs)
      .filter((f) => f.endsWith('.md'))
      .sort()
      .map((f) => join(docs, f)),
  ];
}

describe('links in README.md and docs/', () => {
  it('spells anchors as GitHub does and finds links outside code', () => {
    assert.equal(headingAnchor('Sidecar injection (`/inject`, src/inject)'), 'sidecar-injection-inject-srcinject');
    assert.equal(headingAnchor('meshctl install, upgrade, uninstall, verify-install'), 'meshctl-install-upgrade-uninstall-verify-install');
    assert.deepEqual([...anchorsOf('# A\n```sh\n# not a heading\n```\n## A\n### B.c')], ['a', 'a-1', 'bc']);
    assert.deepEqual(linkTargets('[x](a.md#b) `[y](no.md)` [z](https://example.com)\n```\n[w](no.md)\n```'), [
      'a.md#b',
      'https://example.com',
    ]);
  });

  it('every relative link points at an existing file and heading', () => {
    const problems: string[] = [];
    let checked = 0;
    for (const file of markdownFiles()) {
      const where = relative(REPO_ROOT, file);
      const text = readFileSync(file, 'utf8');
      for (const target of linkTargets(text)) {
        if (isExternal(target)) continue;
        checked++;
        const [path = '', anchor] = target.split('#', 2);
        const dest = path === '' ? file : resolve(dirname(file), decodeURIComponent(path));
        if (!existsSync(dest)) {
          problems.push(`${where}: ${target}: no such file`);
          continue;
        }
        if (anchor !== undefined && dest.endsWith('.md') && !anchorsOf(readFileSync(dest, 'utf8')).has(anchor)) {
          problems.push(`${where}: ${target}: no heading with that anchor in ${relative(REPO_ROOT, dest)}`);
        }
      }
    }
    assert.deepEqual(problems, []);
    assert.ok(checked >= 50, `only ${checked} relative links found: is the link pattern still right?`);
  });
});
