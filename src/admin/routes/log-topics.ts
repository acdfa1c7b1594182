// Log topics (spec 4.8): messages on topics matching a log topic's filter are written to the log
// at its level. List, add, delete; applied at once on every worker (LogTopicManager).
import type { AdminContext } from '../context.ts';
import { ok, type Route } from '../http.ts';
import { object, onlyFields, reqStr } from '../validate.ts';

export function logTopicRoutes(ctx: AdminContext): Route[] {
  const topics = ctx.logTopics;
  return [
    {
      method: 'GET',
      path: '/api/log/topics',
      access: 'read',
      tag: 'logs',
      summary: 'Log topics: {id, topic, level, createTime}',
      handler: () => ok(topics.list()),
    },
    {
      method: 'POST',
      path: '/api/log/topic/add',
      access: 'write',
      tag: 'logs',
      summary: 'Add a log topic: messages whose topic matches the filter are logged at the level (subject to the log level in force)',
      body: { type: 'object', required: ['topic', 'level'], properties: { topic: { type: 'string' }, level: { enum: ['DEBUG', 'INFO', 'WARN', 'ERROR'] } } },
      async handler(req) {
        const b = object(req.body);
        onlyFields(b, ['topic', 'level']);
        const topic = reqStr(b, 'topic', { max: 65535 });
        const level = reqStr(b, 'level');
        return ok(await topics.add(topic, level));
      },
    },
    {
      method: 'POST',
      path: '/api/log/topic/delete',
      access: 'write',
      tag: 'logs',
      summary: 'Delete a log topic',
      body: { type: 'object', required: ['id'], properties: { id: { type: 'string' } } },
      async handler(req) {
        const id = reqStr(object(req.body), 'id');
        await topics.delete(id);
        return ok({ id });
      },
    },
  ];
}
