// Topic rewrite's routes: list, replace, add, delete the rules (stored, on every worker and node).
import { Type } from '@sinclair/typebox';

import { ok, type Route } from '../../admin/http.ts';
import { route, strict } from '../../admin/schema.ts';
import type { Rewrite } from './rewrite.ts';

const RULE = Type.Object({
  action: Type.Union([Type.Literal('publish'), Type.Literal('subscribe'), Type.Literal('all')], { description: 'what the rule rewrites: PUBLISH topics (and wills), SUBSCRIBE/UNSUBSCRIBE filters, or both' }),
  sourceFilter: Type.String({ description: 'a topic filter: only topics it matches are tried against the regex' }),
  regex: Type.String({ description: 'a JavaScript regular expression run on the whole topic' }),
  destination: Type.String({ description: 'the new topic; $1..$n are the regex groups, ${clientid} and ${username} the client\'s' }),
}, strict);

export function rewriteRoutes(rewrite: Rewrite): Route[] {
  return [
    {
      method: 'GET',
      path: '/api/rewrite',
      access: 'read',
      tag: 'mqtt',
      summary: 'Topic rewrite rules in order: {source (config|api), rules [{position, action, sourceFilter, regex, destination, rewritten}]}; rewritten: topics the rule rewrote on this node',
      handler: async () => ok(rewrite.status()),
    },
    route({
      method: 'PUT',
      path: '/api/rewrite',
      access: 'write',
      tag: 'mqtt',
      summary: 'Replace every topic rewrite rule (an empty list removes them): stored, on every worker at once and on every node of a cluster. 400 names the field of a bad rule ([i].regex). Answers the rules',
      body: Type.Object({ rules: Type.Array(RULE, { maxItems: 1000 }) }, strict),
      handler: async (req) => ok(await rewrite.replace(req.body.rules)),
    }),
    route({
      method: 'POST',
      path: '/api/rewrite',
      access: 'write',
      tag: 'mqtt',
      summary: 'Add a topic rewrite rule at position (1-based; default: last). Answers the rules',
      body: Type.Object({ rule: RULE, position: Type.Optional(Type.Integer({ minimum: 1, description: 'where the rule goes (1: first)' })) }, strict),
      handler: async (req) => ok(await rewrite.add(req.body.rule, req.body.position)),
    }),
    {
      method: 'DELETE',
      path: '/api/rewrite/:position',
      access: 'write',
      tag: 'mqtt',
      summary: 'Remove the topic rewrite rule at position (1-based); 404 when there is none. Answers the rules',
      handler: async (req) => ok(await rewrite.remove(Number(req.params.position))),
    },
  ];
}
