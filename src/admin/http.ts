// The admin API's request, reply and error types, and the envelope every route answers in:
// success is HTTP 200 with {code: 200, message: "success", data}; an error carries its status in
// the HTTP status and in the body, {code, message, error, field?}, where `error` is a stable string
// code; a few routes answer other shapes (docs/api/README.md, "Requests, answers and errors").
// No I/O here: server.ts owns that.

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
  /** What a write did, for the audit log (set by the route; defaults come from the request). */
  audit?: AuditNote;
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

/** A tiny JSON-schema subset, enough for the OpenAPI document. */
export type Schema = Record<string, unknown>;

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
  /** Request body schema (POST) or query parameters (GET), for the OpenAPI document. */
  body?: Schema;
  query?: Record<string, Schema & { required?: boolean }>;
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

const ERROR_CODES: Record<number, string> = {
  400: 'BAD_REQUEST',
  401: 'UNAUTHORIZED',
  403: 'FORBIDDEN',
  404: 'NOT_FOUND',
  405: 'METHOD_NOT_ALLOWED',
  409: 'CONFLICT',
  413: 'PAYLOAD_TOO_LARGE',
  415: 'UNSUPPORTED_MEDIA_TYPE',
  429: 'TOO_MANY_REQUESTS',
  500: 'INTERNAL_ERROR',
  503: 'UNAVAILABLE',
};

/** An error a route answers with: the status goes in the HTTP status line and in the body. */
export class HttpError extends Error {
  readonly status: number;
  readonly error: string;
  /** The request field at fault (400). */
  readonly field: string | undefined;
  /** Headers the answer carries (retry-after of a 429, allow of a 405). */
  readonly headers: Record<string, string> | undefined;
  /** More about the error, in the body beside `field` (an SQL error's line and column). */
  readonly details: Record<string, unknown> | undefined;

  constructor(status: number, message: string, options: { error?: string; field?: string; headers?: Record<string, string>; details?: Record<string, unknown> } = {}) {
    super(message);
    this.name = 'HttpError';
    this.status = status;
    this.error = options.error ?? ERROR_CODES[status] ?? 'ERROR';
    this.field = options.field;
    this.headers = options.headers;
    this.details = options.details;
  }
}

export function badRequest(field: string, message: string): HttpError {
  return new HttpError(400, `${field}: ${message}`, { field, error: 'INVALID_PARAMETER' });
}

export function notFound(message: string): HttpError {
  return new HttpError(404, message);
}

export function conflict(field: string, message: string): HttpError {
  return new HttpError(409, `${field}: ${message}`, { field });
}

/** A refusal from elsewhere in the broker (a worker op, the endpoint registry) that carries its
 * HTTP status, as the admin API's error. */
export function refusal(err: { status: number; message: string; code?: string; field?: string }): HttpError {
  return new HttpError(err.status, err.message, { error: err.code, field: err.field });
}

/** Runs a route's work; what it throws goes through `toHttp` (a module's own refusals become
 * their HttpError, anything else passes unchanged). */
export async function answering<T>(work: () => T | Promise<T>, toHttp: (err: unknown) => unknown): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw toHttp(err);
  }
}

export function json(value: unknown, status = 200): Reply {
  return { status, contentType: 'application/json; charset=utf-8', body: JSON.stringify(value) };
}

/** `{code:200, message:"success", data}`. */
export function ok(data?: unknown): Reply {
  return json(data === undefined ? { code: 200, message: 'success' } : { code: 200, message: 'success', data });
}

/** The paged shape `{data, total, page, size}`. */
export function paged<T>(all: readonly T[], page: number, size: number): Reply {
  return json({ data: all.slice((page - 1) * size, page * size), total: all.length, page, size });
}

export function text(body: string, contentType = 'text/plain; charset=utf-8'): Reply {
  return { status: 200, contentType, body };
}

export function errorReply(err: HttpError): Reply {
  const body: Record<string, unknown> = { code: err.status, message: err.message, error: err.error };
  if (err.field) body.field = err.field;
  if (err.details) Object.assign(body, err.details);
  const reply = json(body, err.status);
  if (err.headers) reply.headers = { ...err.headers };
  return reply;
}
