/** The list operations istiod's patches share (envoyfilter/util.go): first match only. */

export function replaceFirst<T>(list: T[], matches: (e: T) => boolean, make: () => T): boolean {
  const i = list.findIndex(matches);
  if (i < 0) return false;
  list[i] = make();
  return true;
}

export function insertBeforeFirst<T>(list: T[], matches: (e: T) => boolean, make: () => T): boolean {
  const i = list.findIndex(matches);
  if (i < 0) return false;
  list.splice(i, 0, make());
  return true;
}

export function insertAfterFirst<T>(list: T[], matches: (e: T) => boolean, make: () => T): boolean {
  const i = list.findIndex(matches);
  if (i < 0) return false;
  list.splice(i + 1, 0, make());
  return true;
}

/** Removes every element that matches, in place. */
export function removeAll<T>(list: T[], matches: (e: T) => boolean): void {
  let w = 0;
  for (const e of list) if (!matches(e)) list[w++] = e;
  list.length = w;
}
