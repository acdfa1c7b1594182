// Logs (spec 4.8, without the log topics): query the log store newest first, add an operator's
// entry, delete old log files, download a time range as NDJSON (gzip on request, streamed), the
// same query addressed to a node (this one until the cluster lands), and the log level of every
// thread at run time. The store is the supervisor's (src/log/log-store.ts).
import { Readable, pipeline } from 'node:stream';
import { createGzip } from 'node:zlib';

import { DomainError, invalid } from '../../errors/domain-error.ts';
import type { AdminContext } from '../context.ts';
import { json, ok, type Reply, type Route } from '../http.ts';
import { object, onlyFields, paging, reqStr, str, bool, type Body } from '../validate.ts';
import { LOG_LEVELS, isLogLevel, type LogLevel } from '../../log/index.ts';
import type { LogStore } from '../../log/log-store.ts';
import type { LogFilter } from '../../log/log-entry.ts';

const LEVELS_UPPER = LOG_LEVELS.map((l) => l.toUpperCase());
const FILTER_FIELDS = ['level', 'startTime', 'endTime', 'module', 'text'];
const QUERY_FIELDS = ['page', 'size', ...FILTER_FIELDS];
const DOWNLOAD_FIELDS = [...FILTER_FIELDS, 'gzip'];
const ISO_TIME = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?$/;
const MAX_MESSAGE = 64 * 1024;

const FILTER_SCHEMA = {
  level: { type: 'string', enum: LEVELS_UPPER, description: 'This level and the ones above it (case-insensitive)' },
  startTime: { type: 'string', format: 'date-time' },
  endTime: { type: 'string', format: 'date-time' },
  module: { type: 'string', description: 'The logger name: main, worker-0, operator, ...' },
  text: { type: 'string', description: 'A substring of the message or of the fields' },
};
const QUERY_SCHEMA = { type: 'object', properties: { page: { type: 'integer', minimum: 1 }, size: { type: 'integer', minimum: 1, maximum: 1000 }, ...FILTER_SCHEMA } };

export function logRoutes(ctx: AdminContext): Route[] {
  const store = (): LogStore => {
    const s = ctx.supervisor.logs;
    if (!s) throw new DomainError('UNAVAILABLE', 'the log store is off (log.file.enabled is false)');
    return s;
  };
  const query = async (b: Body): Promise<Reply> => {
    const { page, size } = paging(b);
    const { data, total } = await store().query(filterOf(b), page, size);
    return json({ data, total, page, size });
  };
  return [
    {
      method: 'POST',
      path: '/log/query',
      access: 'read',
      readOnly: true,
      tag: 'logs',
      summary: 'Log entries of every thread, newest first, paged: {data: [{id, time, level, module, message, fields}], total, page, size}',
      body: QUERY_SCHEMA,
      handler(req) {
        const b = object(req.body);
        onlyFields(b, QUERY_FIELDS);
        return query(b);
      },
    },
    {
      method: 'POST',
      path: '/log/remote/query',
      access: 'read',
      readOnly: true,
      tag: 'logs',
      summary: "/log/query on the node `node` (absent: this node). Single node: another node's name is 404",
      body: { ...QUERY_SCHEMA, properties: { node: { type: 'string' }, ...QUERY_SCHEMA.properties } },
      handler(req) {
        const b = object(req.body);
        onlyFields(b, ['node', ...QUERY_FIELDS]);
        const node = str(b, 'node', { nonEmpty: true });
        if (node !== undefined && node !== ctx.config.nodeName) {
          throw new DomainError('NOT_FOUND', `node: no node ${JSON.stringify(node)} (this node is ${JSON.stringify(ctx.config.nodeName)} and there is no cluster)`, { field: 'node' });
        }
        const { node: _node, ...rest } = b;
        return query(rest);
      },
    },
    {
      method: 'POST',
      path: '/log/add',
      access: 'write',
      tag: 'logs',
      summary: "Writes an operator's entry to the log (whatever the log level); answers its id",
      body: { type: 'object', required: ['level', 'message'], properties: { level: FILTER_SCHEMA.level, message: { type: 'string' }, module: { type: 'string', default: 'operator' } } },
      handler(req) {
        const b = object(req.body);
        onlyFields(b, ['level', 'message', 'module']);
        const level = levelOf(b, true)!;
        const message = reqStr(b, 'message', { max: MAX_MESSAGE });
        const module = str(b, 'module', { nonEmpty: true, max: 64 }) ?? 'operator';
        const logs = ctx.supervisor.logs;
        ctx.log.named(module).force(level, message, { user: req.user!.username });
        return ok({ id: logs ? logs.lastId : null });
      },
    },
    {
      method: 'POST',
      path: '/log/delete',
      access: 'write',
      tag: 'logs',
      summary: 'Deletes whole log files: those whose entries are all older than `before` (ISO 8601), or all at or before the entry `id`; answers how many files went',
      body: { type: 'object', properties: { before: { type: 'string', format: 'date-time' }, id: { type: 'integer' } } },
      async handler(req) {
        const b = object(req.body);
        onlyFields(b, ['before', 'id']);
        const before = timeOf(b, 'before');
        const id = b.id;
        if (id !== undefined && (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1)) throw invalid('id', 'expected a log entry id (a positive integer)');
        if ((before === undefined) === (id === undefined)) throw invalid('before', 'give either before (ISO 8601 time) or id');
        const removedFiles = await store().deleteOld(before !== undefined
          ? (e) => Date.parse(e.time) < before
          : (e) => e.id <= (id as number));
        return ok({ removedFiles });
      },
    },
    {
      method: 'POST',
      path: '/log/download',
      access: 'read',
      readOnly: true,
      tag: 'logs',
      summary: 'The entries of a time range (and level, module, text) as an NDJSON attachment, oldest first, streamed; gzip: true for a .gz file',
      body: { type: 'object', properties: { ...FILTER_SCHEMA, gzip: { type: 'boolean' } } },
      handler(req) {
        const b = object(req.body);
        onlyFields(b, DOWNLOAD_FIELDS);
        return download(store(), filterOf(b), bool(b, 'gzip') ?? false);
      },
    },
    {
      method: 'GET',
      path: '/log/download',
      access: 'read',
      tag: 'logs',
      summary: 'POST /log/download with the fields as query parameters (gzip=true)',
      query: { ...FILTER_SCHEMA, gzip: { type: 'boolean' } },
      handler(req) {
        const b: Body = Object.fromEntries(req.query);
        onlyFields(b, DOWNLOAD_FIELDS);
        const gzip = b.gzip;
        if (gzip !== undefined && gzip !== 'true' && gzip !== 'false') throw invalid('gzip', 'expected true or false');
        return download(store(), filterOf(b), gzip === 'true');
      },
    },
    {
      method: 'GET',
      path: '/log/level',
      access: 'read',
      tag: 'logs',
      summary: 'The log level of every thread: {level}',
      handler: () => ok({ level: ctx.supervisor.logLevel.toUpperCase() }),
    },
    {
      method: 'POST',
      path: '/log/level',
      access: 'write',
      tag: 'logs',
      summary: 'Sets the log level of the main thread and every worker (until a restart: log.level is the level at start)',
      body: { type: 'object', required: ['level'], properties: { level: FILTER_SCHEMA.level } },
      async handler(req) {
        const b = object(req.body);
        onlyFields(b, ['level']);
        const level = levelOf(b, true)!;
        await ctx.supervisor.setLogLevel(level);
        ctx.log.info('log level changed', { to: level, user: req.user!.username });
        return ok({ level: level.toUpperCase() });
      },
    },
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

function filterOf(b: Body): LogFilter {
  const f: LogFilter = {};
  const level = levelOf(b, false);
  if (level !== undefined) f.level = level;
  const startTime = timeOf(b, 'startTime');
  const endTime = timeOf(b, 'endTime');
  if (startTime !== undefined) f.startTime = startTime;
  if (endTime !== undefined) f.endTime = endTime;
  if (startTime !== undefined && endTime !== undefined && endTime < startTime) throw invalid('endTime', 'is before startTime');
  const module = str(b, 'module', { nonEmpty: true });
  if (module !== undefined) f.module = module;
  const text = str(b, 'text', { nonEmpty: true });
  if (text !== undefined) f.text = text;
  return f;
}

function levelOf(b: Body, required: boolean): LogLevel | undefined {
  const v = str(b, 'level', { required });
  if (v === undefined) return undefined;
  const level = v.toLowerCase();
  if (!isLogLevel(level)) throw invalid('level', `must be one of ${LEVELS_UPPER.join(', ')}, got ${JSON.stringify(v)}`);
  return level;
}

function timeOf(b: Body, field: string): number | undefined {
  const v = str(b, field, { nonEmpty: true });
  if (v === undefined) return undefined;
  const t = Date.parse(v);
  if (!ISO_TIME.test(v) || Number.isNaN(t)) throw invalid(field, `expected an ISO 8601 time, got ${JSON.stringify(v)}`);
  return t;
}
