// Owns reading a driver's error for the source layer: the network FailureKind buried in its
// chain (kafkajs wraps in `originalError`, MongoDB in `cause` or a server selection `reason`,
// happy-eyeballs connects in AggregateError), and its message with every secret of the source
// replaced, so no password reaches an error, a log line or an API answer.
import { classifyNetworkError } from './classify.ts';
import type { FailureKind } from './types.ts';

/** The first network kind found in `err` or the errors it wraps; null if none. */
export function networkKindIn(err: unknown): FailureKind | null {
  const seen = new Set<unknown>();
  const queue: unknown[] = [err];
  while (queue.length > 0 && seen.size < 32) {
    const e = queue.shift();
    if (e === null || typeof e !== 'object' || seen.has(e)) continue;
    seen.add(e);
    const kind = classifyNetworkError(e);
    if (kind !== null) return kind;
    const o = e as { cause?: unknown; originalError?: unknown; reason?: unknown; errors?: unknown };
    queue.push(o.cause, o.originalError);
    if (Array.isArray(o.errors)) queue.push(...o.errors);
    // MongoServerSelectionError.reason: a TopologyDescription whose servers carry their last error.
    const servers = (o.reason as { servers?: unknown } | undefined)?.servers;
    if (servers instanceof Map) for (const d of servers.values()) queue.push((d as { error?: unknown }).error);
  }
  return null;
}

/** `err`'s message (the errors it wraps named after it when it says little) without any of `secrets`. */
export function safeMessage(err: unknown, secrets: readonly (string | undefined)[]): string {
  let message = err instanceof Error ? err.message : String(err);
  if (message === '' && err instanceof AggregateError) message = err.errors.map((e) => (e instanceof Error ? e.message : String(e))).join('; ');
  for (const secret of secrets) {
    if (secret !== undefined && secret.length > 0) message = message.split(secret).join('******');
  }
  return message;
}
