// Topics (spec 4.4): the topic filters clients are subscribed to, across every worker and every
// session (connected or offline persistent) and, in a cluster, every node, with their subscriber
// counts; and the subscribers of one filter. lastMessage is the time of the newest retained
// message the filter matches (the broker does not track the time of every message per topic:
// that would cost on every publish).
import { Type } from '@sinclair/typebox';

import { covers } from '../../auth/topic-filter.ts';
import { recordReceivedAt } from '../../broker/message.ts';
import { isoOrNull } from '../../broker/payload-text.ts';
import type { AdminContext } from '../context.ts';
import { json, type Route } from '../http.ts';
import { PAGING, pageOf, route, strict } from '../schema.ts';
import { TOPIC_FILTER, clusterFields, onAllNodes, sharedInner, topicFilter } from './mqtt-common.ts';

const SHARED = /^\$(share|queue)\//;

/** Newest retained message time (ms) among the retained topics `filter` matches; 0: none. */
export function lastRetainedAt(ctx: AdminContext, filter: string): number {
  let buf: Buffer;
  try {
    buf = ctx.supervisor.retained.match(filter);
  } catch {
    return 0; // a filter the retained index refuses matches nothing
  }
  let newest = 0;
  for (let at = 0; at < buf.length;) {
    const len = buf.readUInt32LE(at);
    const t = recordReceivedAt(buf, at + 4);
    if (t > newest) newest = t;
    at += 4 + len;
  }
  return newest;
}

/** Whether the subscribed `filter` is one the query asks for: a query filter covers it (for a
 * shared subscription, its inner filter); a shared query matches only itself. */
function wanted(query: string | undefined, filter: string): boolean {
  if (query === undefined) return true;
  if (SHARED.test(query)) return query === filter;
  const inner = sharedInner(filter);
  return inner !== undefined && covers(query, inner);
}

export function topicRoutes(ctx: AdminContext): Route[] {
  return [
    route({
      method: 'POST',
      path: '/topic/query',
      access: 'read',
      readOnly: true,
      tag: 'topics',
      summary: 'Subscribed topic filters (every session, online or offline; in a cluster of every node, with `nodesMissing`) with subscriber counts, paged; `topic` (a filter) keeps those it covers; lastMessage: newest matching retained message or null. `subscriptions`: the subscriptions to every listed filter (all pages) other than $SYS ones, `sysSubscriptions` those to $SYS filters (the broker\'s own subscriptions for rules, bridges and viewers are never listed)',
      body: Type.Object({ ...PAGING, topic: Type.Optional(Type.String({ description: 'a topic filter: subscribed filters it covers are listed (a literal topic lists only itself); empty: all' })) }, strict),
      async handler(req) {
        const { page, size } = pageOf(req.body);
        const query = req.body.topic ? topicFilter(ctx, req.body.topic) : undefined;
        const { parts, missing } = await onAllNodes(ctx, 'clients.topics');
        const counts = new Map<string, number>();
        for (const part of parts) for (const list of part.results) for (const [f, n] of list) counts.set(f, (counts.get(f) ?? 0) + n);
        const all = [...counts].filter(([f]) => wanted(query, f)).sort(([a], [c]) => (a < c ? -1 : a > c ? 1 : 0));
        const data = all.slice((page - 1) * size, page * size).map(([topic, subscribers]) => {
          const inner = sharedInner(topic);
          return { topic, subscribers, lastMessage: inner ? isoOrNull(lastRetainedAt(ctx, inner)) : null };
        });
        let subscriptions = 0;
        let sysSubscriptions = 0;
        for (const [f, n] of all) {
          if (f.startsWith('$SYS/')) sysSubscriptions += n;
          else subscriptions += n;
        }
        return json({ data, total: all.length, subscriptions, sysSubscriptions, page, size, ...clusterFields(ctx, missing) });
      },
    }),
    route({
      method: 'POST',
      path: '/topic/connect/query',
      access: 'read',
      readOnly: true,
      tag: 'topics',
      summary: 'The clients subscribed to a topic filter (exactly this filter), with their subscription options, paged; an empty page when none is. In a cluster: of every node, each with its `node`, and `nodesMissing`',
      body: Type.Object({ ...PAGING, topic: TOPIC_FILTER }, strict),
      async handler(req) {
        const { page, size } = pageOf(req.body);
        const topic = topicFilter(ctx, req.body.topic);
        const { parts, missing } = await onAllNodes(ctx, 'clients.subscribers', { topic });
        // In a cluster each subscriber says which node holds its session.
        const all = parts.flatMap((p) => p.results.flatMap((list) => (ctx.cluster ? list.map((s) => ({ ...s, node: p.node })) : list)))
          .sort((a, c) => (a.clientId < c.clientId ? -1 : a.clientId > c.clientId ? 1 : 0));
        return json({ data: all.slice((page - 1) * size, page * size), total: all.length, page, size, ...clusterFields(ctx, missing) });
      },
    }),
  ];
}
