/** A value or the reasons there is none. Validation returns this; it never throws. */
export type Result<T, E = string> = { ok: true; value: T } | { ok: false; errors: E[] };

export const ok = <T>(value: T): Result<T, never> => ({ ok: true, value });
export const fail = <E>(...errors: E[]): Result<never, E> => ({ ok: false, errors });
