// The ban list's routes (EMQX's banned API): list, add one, add many, delete one, clear.
// Each write is audited (resource `ban`, id `<as>:<who>`; a bulk import and a clear by count).
import { Type } from '@sinclair/typebox';

import { ok, paged, type Route } from '../../admin/http.ts';
import { PAGING, pageOf, route, strict } from '../../admin/schema.ts';
import type { BanInput, BanList } from './ban-list.ts';
import { BAN_KINDS, banId, type BanAs } from './types.ts';

const AS = Type.Union(BAN_KINDS.map((k) => Type.Literal(k)), { description: 'what the ban names: clientid, username, peerhost (an IPv4 or IPv6 address) or peerhost_net (a CIDR block)' });

const BAN = Type.Object(
  {
    as: AS,
    who: Type.String({ minLength: 1, maxLength: 65535, description: 'the client id, username, address or CIDR block' }),
    reason: Type.Optional(Type.String({ maxLength: 1024 })),
    by: Type.Optional(Type.String({ maxLength: 256, description: 'who made it (default: the signed-in user)' })),
    until: Type.Optional(Type.Union([
      Type.String({ minLength: 1, description: 'RFC 3339 date-time' }),
      Type.Integer({ minimum: 0, description: 'seconds since the epoch' }),
      Type.Null(),
    ], { description: 'when the ban ends (in the future); absent or null: never' })),
  },
  strict,
);

/** Most bans one bulk request makes. */
export const MAX_BULK = 10_000;

export function banRoutes(list: BanList): Route[] {
  const inputOf = (b: { as: BanAs; who: string; reason?: string; by?: string; until?: string | number | null }, user: string | undefined): BanInput => ({ as: b.as, who: b.who, reason: b.reason, by: b.by ?? user ?? 'admin', until: b.until });
  return [
    route({
      method: 'GET',
      path: '/api/banned',
      access: 'read',
      tag: 'banned',
      summary: 'Bans, newest first: {data: [{as, who, by, reason, at, until}], total, page, size}; `as` filters by kind. `until` null: never ends',
      query: Type.Object({ ...PAGING, as: Type.Optional(AS) }, strict),
      handler(req) {
        const { page, size } = pageOf(req.queryValues);
        return paged(list.list(req.queryValues.as), page, size);
      },
    }),
    route({
      method: 'POST',
      path: '/api/banned',
      access: 'write',
      tag: 'banned',
      summary: 'Ban a client id, username, address or CIDR block (replacing a ban of the same as and who): checked at every CONNECT before authentication (0x8A Banned; 5 in MQTT 3.1.1), on every node; connected clients it names are disconnected. Addresses are kept in canonical form (IPv4-mapped IPv6 as IPv4). 409 past banned.maxEntries',
      body: BAN,
      async handler(req) {
        const made = await list.add(inputOf(req.body, req.user?.username));
        req.audit = { action: 'create', resource: 'ban', resourceId: banId(made.as, made.who), after: made };
        return ok(made);
      },
    }),
    route({
      method: 'POST',
      path: '/api/banned/bulk',
      access: 'write',
      tag: 'banned',
      summary: `Make up to ${MAX_BULK} bans at once (an import): all are checked first (a bad one refuses them all, naming bans[i].field), then stored and sent to every worker in one operation. Answers {count}`,
      body: Type.Object({ bans: Type.Array(BAN, { minItems: 1, maxItems: MAX_BULK }) }, strict),
      async handler(req) {
        const user = req.user?.username;
        const made = await list.addMany(req.body.bans.map((b) => inputOf(b, user)));
        req.audit = { action: 'import', resource: 'ban', resourceId: null, after: { count: made.length } };
        return ok({ count: made.length });
      },
    }),
    {
      method: 'DELETE',
      path: '/api/banned/:as/:who',
      access: 'write',
      tag: 'banned',
      summary: 'Lift a ban (a CIDR block\'s `/` URL-encoded as %2F); answers the ban removed, 404 when none',
      async handler(req) {
        const gone = await list.delete(req.params.as, req.params.who);
        req.audit = { action: 'delete', resource: 'ban', resourceId: banId(gone.as, gone.who), before: gone };
        return ok(gone);
      },
    },
    {
      method: 'DELETE',
      path: '/api/banned',
      access: 'write',
      tag: 'banned',
      summary: 'Lift every ban; answers {deleted}',
      async handler(req) {
        const deleted = await list.clear();
        req.audit = { action: 'clear', resource: 'ban', resourceId: null, after: { deleted } };
        return ok({ deleted });
      },
    },
  ];
}
