// Owns the admin API's request validation: a route's TypeBox schemas (`body`, `query`) are compiled
// once, when the route is added to the server, and checked before its handler runs (src/schema/
// check.ts: 400 INVALID_PARAMETER naming the first bad field); the same schemas are the OpenAPI
// document (openapi.ts). Handlers keep only the checks a schema cannot express (topic filters, one
// field against another, the state of the broker).
import { Type, type Static, type TProperties, type TSchema, type TUnsafe } from '@sinclair/typebox';

import { compileSchema } from '../schema/check.ts';
import type { AdminRequest, Reply, Route } from './http.ts';

/** A route's compiled checks; each throws the 400 naming the first bad field. */
export interface RouteChecks {
  body?: (value: unknown) => void;
  query?: (value: unknown) => void;
}

/** Compiles a route's schemas (at startup: a schema Ajv refuses stops the server from starting). */
export function compileRoute(route: Route): RouteChecks {
  const checks: RouteChecks = {};
  try {
    if (route.body) checks.body = compileSchema(route.body);
    if (route.query) checks.query = compileSchema(route.query, { coerce: true });
  } catch (err) {
    throw new Error(`admin route ${route.method} ${route.path}: its schema does not compile: ${(err as Error).message}`, { cause: err });
  }
  return checks;
}

/** Checks a request against its route's compiled schemas: the body (an empty body is `{}`) and the
 * query string (as an object, the last of repeated names); throws 400 naming the field. */
export function checkRequest(checks: RouteChecks, req: AdminRequest): void {
  if (checks.body) {
    if (req.body === undefined || req.body === null) req.body = {};
    checks.body(req.body);
  }
  if (checks.query) {
    // An empty parameter (`?name=`, as a form sends an empty field) is an absent one.
    const values: Record<string, unknown> = Object.fromEntries([...req.query].filter(([, v]) => v !== ''));
    checks.query(values);
    req.queryValues = values;
  }
}

/** A request whose body and query values have their schemas' types (checked before the handler). */
export type CheckedRequest<B extends TSchema | undefined, Q extends TSchema | undefined> = AdminRequest & {
  body: B extends TSchema ? Static<B> : unknown;
  queryValues: Q extends TSchema ? Static<Q> : Record<string, unknown>;
};

/** A route whose handler sees its body and query with their schemas' types. */
export type TypedRoute<B extends TSchema | undefined, Q extends TSchema | undefined> = Omit<Route, 'body' | 'query' | 'handler'> & {
  body?: B;
  query?: Q;
  handler(req: CheckedRequest<B, Q>): Promise<Reply> | Reply;
};

/** A route whose handler sees its body and query with their schemas' types. */
export function route<B extends TSchema | undefined = undefined, Q extends TSchema | undefined = undefined>(r: TypedRoute<B, Q>): Route {
  return r as Route;
}

// ---- schema parts many routes share ----

const PAGE_DEFAULT = 1;
const SIZE_DEFAULT = 20;

/** `page` (1-based, default 1) and `size` (default 20, at most 1000), in a body or a query. */
export const PAGING = {
  page: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000, default: PAGE_DEFAULT })),
  size: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: SIZE_DEFAULT })),
};

/** The page asked for (the schema filled in the defaults; these are for a caller that did not check). */
export function pageOf(b: { page?: number; size?: number }): { page: number; size: number } {
  return { page: b.page ?? PAGE_DEFAULT, size: b.size ?? SIZE_DEFAULT };
}

/** An id the API makes or takes: letters, digits, . _ - (at most 64). */
export const ID = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9._-]+$', 'x-message': 'letters, digits, . _ - only' });

/** A body of one required, non-empty id (more fields are ignored, as before the schemas). */
export const BY_ID = Type.Object({ id: Type.String({ minLength: 1 }) });

/** An object of free fields (a config checked by its module, sample data). */
export const FREE_OBJECT = Type.Record(Type.String(), Type.Unknown());

/** Strict: a field the route does not know is refused (a typo must not be silently ignored). */
export const strict = { additionalProperties: false } as const;

/**
 * A body of one shape per type, told apart by its `type` field (an OpenAPI oneOf with a
 * discriminator): `common` fields, `type` as the constant of each shape, and `config` as that
 * type's schema. The server checks a body against the shape its type names (schema/check.ts), and
 * the console builds a form per shape. `T` is the handler's view of the body (what it was before
 * the shapes: each module still checks its config).
 */
export function byType<T>(common: TProperties, configs: Record<string, TSchema>, options: { configRequired?: boolean } = {}): TUnsafe<T> {
  const shapes = Object.entries(configs).map(([type, config]) => Type.Object({
    ...common,
    type: Type.Literal(type),
    config: options.configRequired === false ? Type.Optional(config) : config,
  }, strict));
  return Type.Unsafe<T>({ type: 'object', discriminator: { propertyName: 'type' }, oneOf: shapes });
}
