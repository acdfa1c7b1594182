// The shape of a rate limit (messages and bytes per second inbound, each with a burst), its
// schema, and the meaning of its fields. Pure data: the endpoint configuration, the
// configuration keys and the authentication answers (a per-client override) carry it; the
// per-connection buckets are src/broker/rate-limiter.ts, the per-listener total ones
// src/broker/shared-rate-buckets.ts.
import { Type } from '@sinclair/typebox';

/**
 * A rate limit on what a client (or, as an endpoint's totalRateLimit, every client of a listener
 * on this node together) sends: PUBLISH packets per second and PUBLISH bytes per second (whole
 * packets), each a token bucket holding at most its burst (absent: one second's worth). An absent
 * rate is no limit of that kind. Past a limit reading pauses until the bucket has refilled
 * (throttling): nothing is lost.
 */
export interface RateLimit {
  messagesPerSecond?: number;
  messagesBurst?: number;
  bytesPerSecond?: number;
  bytesBurst?: number;
}

export const RATE_LIMIT_RANGES = {
  messagesPerSecond: [1, 10_000_000],
  messagesBurst: [1, 100_000_000],
  bytesPerSecond: [1, 10_000_000_000],
  bytesBurst: [1, 100_000_000_000],
} as const;

const field = (f: keyof typeof RATE_LIMIT_RANGES, description: string) =>
  Type.Optional(Type.Integer({ minimum: RATE_LIMIT_RANGES[f][0], maximum: RATE_LIMIT_RANGES[f][1], description }));

/** The schema of a RateLimit (unknown fields refused, so a typo is not ignored). */
export const RATE_LIMIT_SCHEMA = Type.Object(
  {
    messagesPerSecond: field('messagesPerSecond', 'PUBLISH packets per second (1..10000000); absent: no message limit'),
    messagesBurst: field('messagesBurst', 'PUBLISH packets taken at once above the rate (1..100000000); absent: messagesPerSecond'),
    bytesPerSecond: field('bytesPerSecond', 'PUBLISH bytes (whole packets) per second (1..10000000000); absent: no byte limit'),
    bytesBurst: field('bytesBurst', 'bytes taken at once above the rate (1..100000000000); absent: bytesPerSecond'),
  },
  { additionalProperties: false },
);

/** Whether a limit limits anything (a rate of either kind). */
export function limits(l: RateLimit | undefined | null): l is RateLimit {
  return l != null && (l.messagesPerSecond !== undefined || l.bytesPerSecond !== undefined);
}

/** The problem of a RateLimit that the schema cannot say (null: none): a burst without its rate. */
export function rateLimitProblem(l: RateLimit): { field: string; message: string } | null {
  if (l.messagesBurst !== undefined && l.messagesPerSecond === undefined) return { field: 'messagesBurst', message: 'needs messagesPerSecond' };
  if (l.bytesBurst !== undefined && l.bytesPerSecond === undefined) return { field: 'bytesBurst', message: 'needs bytesPerSecond' };
  return null;
}

/** The throttle kinds, as spindle_rate_limit_throttled_total labels them (index: THROTTLE.*). */
export const THROTTLE_KINDS = ['messages', 'bytes', 'total_messages', 'total_bytes', 'tenant'] as const;
export type ThrottleKind = (typeof THROTTLE_KINDS)[number];
export const THROTTLE = { none: -1, messages: 0, bytes: 1, totalMessages: 2, totalBytes: 3, tenant: 4 } as const;
