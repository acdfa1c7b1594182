// Log topics (spec 4.8): messages on topics matching a log topic's filter are written to the log
// at its level. List, add, delete; applied at once on every worker (LogTopicManager).
import { Type } from '@sinclair/typebox';

import { ok, type Route } from '../../admin/http.ts';
import { BY_ID, route, strict } from '../../admin/schema.ts';
import type { LogTopicManager } from './log-topic-manager.ts';

export function logTopicRoutes(topics: LogTopicManager): Route[] {
  return [
    {
      method: 'GET',
      path: '/api/log/topics',
      access: 'read',
      tag: 'logs',
      summary: 'Log topics: {id, topic, level, createTime}',
      handler: () => ok(topics.list()),
    },
    route({
      method: 'POST',
      path: '/api/log/topic/add',
      access: 'write',
      tag: 'logs',
      summary: 'Add a log topic: messages whose topic matches the filter are logged at the level (subject to the log level in force)',
      body: Type.Object(
        {
          topic: Type.String({ minLength: 1, maxLength: 65535, description: 'a topic filter' }),
          // Any case: the manager checks the level (the configuration file's levels are lower case).
          level: Type.String({ minLength: 1, description: 'DEBUG, INFO, WARN or ERROR' }),
        },
        strict,
      ),
      handler: async (req) => ok(await topics.add(req.body.topic, req.body.level)),
    }),
    route({
      method: 'POST',
      path: '/api/log/topic/delete',
      access: 'write',
      tag: 'logs',
      summary: 'Delete a log topic',
      body: BY_ID,
      async handler(req) {
        await topics.delete(req.body.id);
        return ok({ id: req.body.id });
      },
    }),
  ];
}
