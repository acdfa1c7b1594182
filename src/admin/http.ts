// The admin API's request, reply and error types, and the envelope every route answers in:
// success is HTTP 200 with {code: 200, message: "success", data}; an error carries its status in
// the HTTP status and in the body, {code, message, error, field?}, where `error` is a stable string
// code; a few routes answer other shapes (docs/api/README.md, "Requests, answers and errors").
// No I/O here: server.ts owns that. Every refusal is a DomainError (src/errors/domain-error.ts);
// errorReply is the one place it becomes the envelope.
import type { TObject, TSchema } from '@sinclair/typebox';

import { DomainError, type DomainErrorOptions, type ErrorCode } from '../errors/domain-error.ts';

/** Roles of the broker's admin API. */
export type Role = 'admin' | 'viewer';
/** Roles of the control platform's tenant users (an admin is the platform's SystemAdmin). */
export type TenantRole = 'OrganizationAdmin' | 'ProjectAdmin' | 'User';
export type AnyRole = Role | TenantRole;

export interface AdminUser {
  username: string;
  role: AnyRole;
  /** The user record's id (immutable). */
  id?: string;
  /** A tenant user's organization and, for a project's users, project. */
  organizationId?: string | null;
  projectId?: string | null;
}

export interface AdminRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  /** Parsed JSON body (undefined for GET or an empty body). */
  body: unknown;
  headers: Record<string, string>;
  /** The authenticated user; null on public routes. */
  user: AdminUser | null;
  remoteAddress: string;
  /** Values of a route path's `:name` segments. */
  params: Record<string, string>;
  /** The query string as an object, checked against the route's `query` schema (integers and
   * booleans as such); empty when the route has none. */
  queryValues: Record<string, unknown>;
  /** What a write did, for the audit log (set by the route; defaults come from the request). */
  audit?: AuditNote;
  /** Came over HTTPS (admin.tls): the session cookie is then Secure. */
  secure: boolean;
}

/** A route's account of a write, for the audit log. */
export interface AuditNote {
  action?: string;
  resource?: string;
  resourceId?: string | null;
  organizationId?: string | null;
  projectId?: string | null;
  before?: unknown;
  after?: unknown;
  /** The user who acted when the route itself signed them in (login). */
  username?: string;
  role?: string;
}

export interface Reply {
  status: number;
  contentType: string;
  body: string | Buffer;
  headers?: Record<string, string>;
  /** A body sent as it is produced (chunked), instead of `body`: server.ts writes a chunk at a
   * time and waits while the client is slow; a client that goes away ends the iteration. */
  stream?: AsyncIterable<Uint8Array | string>;
}

/**
 * Who may call a route: `public` needs no credentials, `read` any signed-in user, `write` an
 * admin (a viewer gets 403).
 */
export type Access = 'public' | 'read' | 'write';

export interface Route {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  access: Access;
  /** A POST that changes nothing (a query, a check, a test run): not a write, so the audit log
   * leaves it out. Every other request but a GET is a write. (`access` says who may call a route,
   * not whether it writes: a viewer may change their own password.) */
  readOnly?: true;
  summary: string;
  /** OpenAPI tag (the module). */
  tag: string;
  /** The request body's schema (TypeBox): checked before the handler runs (schema.ts), and the
   * route's OpenAPI request body. */
  body?: TSchema;
  /** The query string's schema (a TypeBox object): checked before the handler runs, its values
   * in req.queryValues; the route's OpenAPI query parameters. */
  query?: TObject;
  handler(req: AdminRequest): Promise<Reply> | Reply;
}

const STATUS_TEXT: Record<number, string> = {
  200: '200 OK',
  400: '400 Bad Request',
  401: '401 Unauthorized',
  403: '403 Forbidden',
  404: '404 Not Found',
  405: '405 Method Not Allowed',
  409: '409 Conflict',
  413: '413 Payload Too Large',
  415: '415 Unsupported Media Type',
  429: '429 Too Many Requests',
  500: '500 Internal Server Error',
  503: '503 Service Unavailable',
};

export function statusLine(status: number): string {
  return STATUS_TEXT[status] ?? `${status} Status`;
}

/** A domain error that carries headers of its answer (the retry-after of a 429, the allow of a
 * 405, the challenge of a 401): the transport's own refusals. */
export class HttpError extends DomainError {
  readonly headers: Record<string, string> | undefined;

  constructor(code: ErrorCode, message: string, options: DomainErrorOptions & { headers?: Record<string, string> } = {}) {
    super(code, message, options);
    this.name = 'HttpError';
    this.headers = options.headers;
  }
}

export function json(value: unknown, status = 200): Reply {
  return { status, contentType: 'application/json; charset=utf-8', body: JSON.stringify(value) };
}

/** `{code:200, message:"success", data}`. */
export function ok(data?: unknown): Reply {
  return json(data === undefined ? { code: 200, message: 'success' } : { code: 200, message: 'success', data });
}

/** ok(data) of an answer for the whole cluster: with `nodesMissing`, the running nodes whose part
 * is not in it (did not answer in time, or failed), when clustering is on (`missing` not null). */
export function okFromNodes(data: unknown, missing: readonly { node: string; reason: string }[] | null): Reply {
  return json(missing === null ? { code: 200, message: 'success', data } : { code: 200, message: 'success', data, nodesMissing: missing });
}

/** The paged shape `{data, total, page, size}`. */
export function paged<T>(all: readonly T[], page: number, size: number): Reply {
  return json({ data: all.slice((page - 1) * size, page * size), total: all.length, page, size });
}

export function text(body: string, contentType = 'text/plain; charset=utf-8'): Reply {
  return { status: 200, contentType, body };
}

/** The one place a domain error becomes the error envelope: {code, message, error, field?,
 * ...details}, the status also in the HTTP status line. */
export function errorReply(err: DomainError): Reply {
  const body: Record<string, unknown> = { code: err.status, message: err.message, error: err.code };
  if (err.field) body.field = err.field;
  if (err.details) Object.assign(body, err.details);
  const reply = json(body, err.status);
  if (err instanceof HttpError && err.headers) reply.headers = { ...err.headers };
  return reply;
}
