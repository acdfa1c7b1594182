// Owns the admin API's request validation: a route's TypeBox schemas (`body`, `query`) are compiled
// once, when the route is added to the server, and checked before its handler runs (src/schema/
// check.ts: 400 INVALID_PARAMETER naming the first bad field); the same schemas are the OpenAPI
// document (openapi.ts). Handlers keep only the checks a schema cannot express (topic filters, one
// field against another, the state of the broker).
import { Kind, type Static, type TSchema } from '@sinclair/typebox';

import { compileSchema } from '../schema/check.ts';
import type { AdminRequest, Reply, Route } from './http.ts';

/** Whether `schema` was built with TypeBox (a route's plain object schema only documents). */
export function isTypeBox(schema: unknown): schema is TSchema {
  return typeof schema === 'object' && schema !== null && Kind in schema;
}

/** A route's compiled checks; each throws the 400 naming the first bad field. */
export interface RouteChecks {
  body?: (value: unknown) => void;
  query?: (value: unknown) => void;
}

/** Compiles a route's schemas (at startup: a schema Ajv refuses stops the server from starting). */
export function compileRoute(route: Route): RouteChecks {
  const checks: RouteChecks = {};
  try {
    if (isTypeBox(route.body)) checks.body = compileSchema(route.body);
    if (isTypeBox(route.query)) checks.query = compileSchema(route.query, { coerce: true });
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
    const values: Record<string, unknown> = Object.fromEntries(req.query);
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
export function route<B extends TSchema | undefined = undefined, Q extends TSchema | undefined = undefined>(
  r: Omit<Route, 'body' | 'query' | 'handler'> & { body?: B; query?: Q; handler(req: CheckedRequest<B, Q>): Promise<Reply> | Reply },
): Route {
  return r as Route;
}
