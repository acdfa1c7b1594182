// Owns turning one log record into one JSON line: Errors become {name, message, code, stack,
// cause, ...own fields}, bigints become strings, and a circular reference becomes "[Circular]"
// instead of an exception thrown from a log call.

/** The plain object written for an Error (its cause serialised the same way). */
export function serializeError(err: Error, seen: Set<object> = new Set()): Record<string, unknown> {
  seen.add(err);
  const out: Record<string, unknown> = { name: err.name, message: err.message };
  const code = (err as { code?: unknown }).code;
  if (code !== undefined) out.code = code;
  if (err.stack !== undefined) out.stack = err.stack;
  for (const key of Object.keys(err)) {
    if (key === 'name' || key === 'message' || key === 'code' || key === 'stack' || key === 'cause') continue;
    out[key] = (err as unknown as Record<string, unknown>)[key];
  }
  if (err instanceof AggregateError) out.errors = err.errors.map((e) => serializeNested(e, seen));
  if ('cause' in err && err.cause !== undefined) out.cause = serializeNested(err.cause, seen);
  return out;
}

function serializeNested(value: unknown, seen: Set<object>): unknown {
  if (!(value instanceof Error)) return value;
  if (seen.has(value)) return '[Circular]';
  return serializeError(value, seen);
}

/** JSON.stringify with a replacer that knows Errors, bigints and cycles. */
export function toJsonLine(record: Record<string, unknown>): string {
  return JSON.stringify(record, jsonReplacer()) + '\n';
}

function jsonReplacer(): (this: unknown, key: string, value: unknown) => unknown {
  // The ancestors of the value being written: a value that is one of them is a cycle.
  const ancestors: unknown[] = [];
  return function replace(this: unknown, _key: string, value: unknown): unknown {
    if (typeof value === 'bigint') return value.toString();
    if (typeof value !== 'object' || value === null) return value;
    while (ancestors.length > 0 && ancestors[ancestors.length - 1] !== this) ancestors.pop();
    if (ancestors.includes(value)) return '[Circular]';
    ancestors.push(value);
    if (!(value instanceof Error)) return value;
    const plain = serializeError(value);
    ancestors.push(plain);
    return plain;
  };
}
