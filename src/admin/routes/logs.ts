// Logs (spec 4.8, without the log topics): query the log store newest first, add an operator's
// entry, delete old log files, download a time range as NDJSON (gzip on request, streamed), the
// same query addressed to a node (this one until the cluster lands), and the log level of every
// thread at run time. The store is the supervisor's (src/log/log-store.ts).
import { Readable, pipeline } from 'node:stream';
import { createGzip } from 'node:zlib';

import { Type, type Static } from '@sinclair/typebox';

import { DomainError, invalid } from '../../errors/domain-error.ts';
import type { AdminContext } from '../context.ts';
import { json, ok, type Reply, type Route } from '../http.ts';
import { PAGING, pageOf, route, strict } from '../schema.ts';
import { LOG_LEVELS, isLogLevel, type LogLevel } from '../../log/index.ts';
import type { LogStore } from '../../log/log-store.ts';
import type { LogFilter } from '../../log/log-entry.ts';

const LEVELS_UPPER = LOG_LEVELS.map((l) => l.toUpperCase());
const MAX_MESSAGE = 64 * 1024;

// A level in any case: the schema takes a string, levelOf reads it.
const LEVEL = Type.String({ description: `${LEVELS_UPPER.join(', ')} (case-insensitive)` });
const TIME = Type.String({
  pattern: '^\\d{4}-\\d{2}-\\d{2}(T\\d{2}:\\d{2}(:\\d{2}(\\.\\d+)?)?(Z|[+-]\\d{2}:?\\d{2})?)?$',
  'x-message': 'expected an ISO 8601 time',
  description: 'ISO 8601',
});

const FILTER = {
  level: Type.Optional(Type.String({ description: `This level and the ones above it: ${LEVELS_UPPER.join(', ')} (case-insensitive)` })),
  startTime: Type.Optional(TIME),
  endTime: Type.Optional(TIME),
  module: Type.Optional(Type.String({ minLength: 1, description: 'The logger name: main, worker-0, operator, ...' })),
  text: Type.Optional(Type.String({ minLength: 1, description: 'A substring of the message or of the fields' })),
};
const QUERY = Type.Object({ ...PAGING, ...FILTER }, strict);
const DOWNLOAD = Type.Object({ ...FILTER, gzip: Type.Optional(Type.Boolean({ default: false })) }, strict);

type Filter = Static<typeof QUERY>;

export function logRoutes(ctx: AdminContext): Route[] {
  const store = (): LogStore => {
    const s = ctx.supervisor.logs;
    if (!s) throw new DomainError('UNAVAILABLE', 'the log store is off (log.file.enabled is false)');
    return s;
  };
  const query = async (b: Filter): Promise<Reply> => {
    const { page, size } = pageOf(b);
    const { data, total } = await store().query(filterOf(b), page, size);
    return json({ data, total, page, size });
  };
  return [
    route({
      method: 'POST',
      path: '/log/query',
      access: 'read',
      readOnly: true,
      tag: 'logs',
      summary: 'Log entries of every thread, newest first, paged: {data: [{id, time, level, module, message, fields}], total, page, size}',
      body: QUERY,
      handler: (req) => query(req.body),
    }),
    route({
      method: 'POST',
      path: '/log/remote/query',
      access: 'read',
      readOnly: true,
      tag: 'logs',
      summary: "/log/query on the node `node` (absent: this node). Single node: another node's name is 404",
      body: Type.Object({ node: Type.Optional(Type.String({ minLength: 1 })), ...PAGING, ...FILTER }, strict),
      handler(req) {
        const { node, ...rest } = req.body;
        if (node !== undefined && node !== ctx.config.nodeName) {
          throw new DomainError('NOT_FOUND', `node: no node ${JSON.stringify(node)} (this node is ${JSON.stringify(ctx.config.nodeName)} and there is no cluster)`, { field: 'node' });
        }
        return query(rest);
      },
    }),
    route({
      method: 'POST',
      path: '/log/add',
      access: 'write',
      tag: 'logs',
      summary: "Writes an operator's entry to the log (whatever the log level); answers its id",
      body: Type.Object(
        { level: LEVEL, message: Type.String({ minLength: 1, maxLength: MAX_MESSAGE }), module: Type.Optional(Type.String({ minLength: 1, maxLength: 64, default: 'operator' })) },
        strict,
      ),
      handler(req) {
        const level = levelOf(req.body.level)!;
        const module = req.body.module ?? 'operator';
        const logs = ctx.supervisor.logs;
        ctx.log.named(module).force(level, req.body.message, { user: req.user!.username });
        return ok({ id: logs ? logs.lastId : null });
      },
    }),
    route({
      method: 'POST',
      path: '/log/delete',
      access: 'write',
      tag: 'logs',
      summary: 'Deletes whole log files: those whose entries are all older than `before` (ISO 8601), or all at or before the entry `id`; answers how many files went',
      body: Type.Object({ before: Type.Optional(TIME), id: Type.Optional(Type.Integer({ minimum: 1, description: 'a log entry id' })) }, strict),
      async handler(req) {
        const before = timeOf(req.body.before, 'before');
        const { id } = req.body;
        // One of two: a time, or an entry id.
        if ((before === undefined) === (id === undefined)) throw invalid('before', 'give either before (ISO 8601 time) or id');
        const removedFiles = await store().deleteOld(before !== undefined
          ? (e) => Date.parse(e.time) < before
          : (e) => e.id <= id!);
        return ok({ removedFiles });
      },
    }),
    route({
      method: 'POST',
      path: '/log/download',
      access: 'read',
      readOnly: true,
      tag: 'logs',
      summary: 'The entries of a time range (and level, module, text) as an NDJSON attachment, oldest first, streamed; gzip: true for a .gz file',
      body: DOWNLOAD,
      handler: (req) => download(store(), filterOf(req.body), req.body.gzip ?? false),
    }),
    route({
      method: 'GET',
      path: '/log/download',
      access: 'read',
      tag: 'logs',
      summary: 'POST /log/download with the fields as query parameters (gzip=true)',
      query: DOWNLOAD,
      handler: (req) => download(store(), filterOf(req.queryValues), req.queryValues.gzip ?? false),
    }),
    {
      method: 'GET',
      path: '/log/level',
      access: 'read',
      tag: 'logs',
      summary: 'The log level of every thread: {level}',
      handler: () => ok({ level: ctx.supervisor.logLevel.toUpperCase() }),
    },
    route({
      method: 'POST',
      path: '/log/level',
      access: 'write',
      tag: 'logs',
      summary: 'Sets the log level of the main thread and every worker (until a restart: log.level is the level at start)',
      body: Type.Object({ level: LEVEL }, strict),
      async handler(req) {
        const level = levelOf(req.body.level)!;
        await ctx.supervisor.setLogLevel(level);
        ctx.log.info('log level changed', { to: level, user: req.user!.username });
        return ok({ level: level.toUpperCase() });
      },
    }),
  ];
}

/** NDJSON, oldest first, a line at a time (never the whole range in memory). */
function download(store: LogStore, filter: LogFilter, gzip: boolean): Reply {
  const lines = Readable.from(store.export(filter), { objectMode: false });
  // pipeline: a client gone (the server ends the gzip stream) also ends the reading of the files.
  const body = gzip ? pipeline(lines, createGzip(), () => {}) : lines;
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const name = `spindle-logs-${stamp}.ndjson${gzip ? '.gz' : ''}`;
  return {
    status: 200,
    contentType: gzip ? 'application/gzip' : 'application/x-ndjson; charset=utf-8',
    headers: { 'content-disposition': `attachment; filename="${name}"` },
    body: '',
    stream: body,
  };
}

function filterOf(b: Static<typeof DOWNLOAD>): LogFilter {
  const f: LogFilter = {};
  const level = levelOf(b.level);
  if (level !== undefined) f.level = level;
  const startTime = timeOf(b.startTime, 'startTime');
  const endTime = timeOf(b.endTime, 'endTime');
  if (startTime !== undefined) f.startTime = startTime;
  if (endTime !== undefined) f.endTime = endTime;
  if (startTime !== undefined && endTime !== undefined && endTime < startTime) throw invalid('endTime', 'is before startTime');
  if (b.module !== undefined) f.module = b.module;
  if (b.text !== undefined) f.text = b.text;
  return f;
}

function levelOf(v: string | undefined): LogLevel | undefined {
  if (v === undefined) return undefined;
  const level = v.toLowerCase();
  if (!isLogLevel(level)) throw invalid('level', `must be one of ${LEVELS_UPPER.join(', ')}, got ${JSON.stringify(v)}`);
  return level;
}

/** A time the schema found in ISO 8601 form, as ms; a date that does not exist (02-31) is refused. */
function timeOf(v: string | undefined, field: string): number | undefined {
  if (v === undefined) return undefined;
  const t = Date.parse(v);
  if (Number.isNaN(t)) throw invalid(field, `expected an ISO 8601 time, got ${JSON.stringify(v)}`);
  return t;
}
