// Retained messages (spec 4.10): query them by topic filter from the shared retained store, and
// delete one (from the store too). Payloads are UTF-8 text when valid, else base64 with
// payloadEncoding "base64"; time is when the broker received the message (to the second).
import { Type } from '@sinclair/typebox';

import { notFound } from '../../errors/domain-error.ts';
import { readRecord, recordReceivedAt, isExpired } from '../../broker/message.ts';
import { payloadText, isoOrNull } from '../../broker/payload-text.ts';
import { clientRetainedCount } from '../../broker/client-retained.ts';
import type { AdminContext } from '../context.ts';
import { json, ok, type Route } from '../http.ts';
import { PAGING, pageOf, route, strict } from '../schema.ts';
import { TOPIC_NAME, topicFilter, topicName } from './mqtt-common.ts';

/** First topic levels /mqtt/retain/stats lists one by one. */
const RETAINED_STATS_LEVELS = 10;

interface RetainedView {
  topic: string;
  qos: number;
  payload: string;
  payloadEncoding?: 'base64';
  time: string | null;
  expiresAt: string | null;
}

/** The records of a `[u32 length][record]...` buffer, unexpired, as the API shows them. */
function views(buf: Buffer, now: number): RetainedView[] {
  const out: RetainedView[] = [];
  for (let at = 0; at < buf.length;) {
    const len = buf.readUInt32LE(at);
    const m = readRecord(buf, at + 4).message;
    if (!isExpired(m, now)) {
      out.push({ topic: m.topic, qos: m.qos, ...payloadText(m.payload), time: isoOrNull(recordReceivedAt(buf, at + 4)), expiresAt: m.expiresAt ? new Date(m.expiresAt).toISOString() : null });
    }
    at += 4 + len;
  }
  return out;
}

export function retainedRoutes(ctx: AdminContext): Route[] {
  const retained = ctx.supervisor.retained;
  return [
    route({
      method: 'POST',
      path: '/mqtt/retain/query',
      access: 'read',
      readOnly: true,
      tag: 'retained',
      summary: 'Retained messages whose topic the filter matches (all without one), by topic, paged: {topic, qos, payload, payloadEncoding?, time, expiresAt}',
      body: Type.Object({ topic: Type.Optional(Type.String({ description: 'a topic filter; absent or empty: all' })), ...PAGING }, strict),
      handler(req) {
        const { page, size } = pageOf(req.body);
        const filter = req.body.topic ? topicFilter(ctx, req.body.topic) : undefined;
        const buf = filter === undefined ? retained.list(0, retained.size) : retained.match(filter);
        const all = views(buf, Date.now()).sort((a, c) => (a.topic < c.topic ? -1 : a.topic > c.topic ? 1 : 0));
        return json({ data: all.slice((page - 1) * size, page * size), total: all.length, page, size });
      },
    }),
    route({
      method: 'POST',
      path: '/mqtt/retain/delete',
      access: 'write',
      tag: 'retained',
      summary: 'Delete the retained message of a topic (also from the store); 404 when there is none',
      body: Type.Object({ topic: TOPIC_NAME }, strict),
      async handler(req) {
        const topic = topicName(ctx, req.body.topic, 'topic', true);
        if (!retained.remove(topic)) throw notFound(`no retained message on ${topic}`);
        await ctx.supervisor.openedStore?.deleteRetained(topic);
        return ok();
      },
    }),
    {
      method: 'GET',
      path: '/mqtt/retain/stats',
      access: 'read',
      tag: 'retained',
      summary: `Retained figures and limits: {count (as clients see them, $SYS not included), counted (what limits.maxRetainedMessages applies to), bytes, limits: {maxRetainedMessages, maxRetainedPayloadSize, retainedDefaultExpiry} (0: none), levels: [{level, count, bytes}] (the ${RETAINED_STATS_LEVELS} first topic levels holding the most; level null: the others summed)}`,
      handler() {
        const l = ctx.config.limits;
        return ok({
          count: clientRetainedCount(retained),
          counted: retained.counted,
          bytes: retained.bytes,
          limits: { maxRetainedMessages: l.maxRetainedMessages, maxRetainedPayloadSize: l.maxRetainedPayloadSize, retainedDefaultExpiry: l.retainedDefaultExpiry },
          levels: retained.levels(RETAINED_STATS_LEVELS).map((v) => ({ level: v.level ?? null, count: v.count, bytes: v.bytes })),
        });
      },
    },
  ];
}
