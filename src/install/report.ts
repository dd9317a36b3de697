/** The change report install, upgrade and uninstall print on stdout: one line per object, then totals. */
import type { ChangeAction, ObjectChange } from './apply.js';
import { describeRef } from './objects.js';

const ACTIONS: readonly ChangeAction[] = ['created', 'configured', 'unchanged', 'pruned', 'removed'];

export function formatChanges(changes: readonly ObjectChange[]): string {
  const lines = changes.map(
    (c) => `${describeRef(c.ref)} ${c.action}${c.action === 'configured' && c.fields.length > 0 ? `: ${c.fields.join(', ')}` : ''}`,
  );
  const totals = ACTIONS.map((a) => [a, changes.filter((c) => c.action === a).length] as const)
    .filter(([, n]) => n > 0)
    .map(([a, n]) => `${n} ${a}`);
  return `${[...lines, totals.length > 0 ? totals.join(', ') : 'nothing to do'].join('\n')}\n`;
}
