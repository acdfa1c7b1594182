// The OpenAPI 3.1 document of the admin API, generated from the route table itself (so it can
// never list a route that does not exist, or miss one that does), with each route's TypeBox
// schemas: the same the server checks requests against (schema.ts).
import type { Route } from './http.ts';

/** A route's query parameters, from its schema's properties. */
function queryParameters(query: NonNullable<Route['query']>): unknown[] {
  const required = new Set(query.required ?? []);
  return Object.entries(query.properties).map(([name, schema]) => ({ name, in: 'query', required: required.has(name), schema: plain(schema) }));
}

/** A schema as JSON (TypeBox marks its schemas with symbols, which JSON leaves out anyway). */
function plain(schema: unknown): unknown {
  return JSON.parse(JSON.stringify(schema));
}

export function openApiDocument(routes: readonly Route[], version: string, title = 'Spindle admin API'): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  const tags = new Set<string>();
  for (const r of [...routes].sort((a, b) => a.path.localeCompare(b.path))) {
    tags.add(r.tag);
    const op: Record<string, unknown> = {
      summary: r.summary,
      tags: [r.tag],
      operationId: `${r.method.toLowerCase()}${r.path.replace(/[^a-zA-Z0-9]+(.)?/g, (_, c: string | undefined) => (c ?? '').toUpperCase())}`,
      responses: {
        200: { description: 'success' },
        ...(r.body || r.query ? { 400: { $ref: '#/components/responses/BadRequest' } } : {}),
        ...(r.access === 'public' ? {} : { 401: { $ref: '#/components/responses/Unauthorized' } }),
        ...(r.access === 'write' ? { 403: { $ref: '#/components/responses/Forbidden' } } : {}),
      },
    };
    if (r.access === 'public') op.security = [];
    if (r.query) {
      op.parameters = queryParameters(r.query);
    }
    if (r.body) op.requestBody = { required: true, content: { 'application/json': { schema: plain(r.body) } } };
    // OpenAPI writes path parameters {id}; the routes :id.
    const params = [...r.path.matchAll(/:([A-Za-z]+)/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
    if (params.length > 0) op.parameters = [...params, ...((op.parameters as unknown[] | undefined) ?? [])];
    if (r.path.startsWith('/api/v1/') && r.access !== 'public') (op.responses as Record<string, unknown>)[403] = { $ref: '#/components/responses/Forbidden' };
    if (r.path.includes('/:')) (op.responses as Record<string, unknown>)[404] = { description: 'not found, or not in the caller\'s scope' };
    (paths[r.path.replace(/:([A-Za-z]+)/g, '{$1}')] ??= {})[r.method.toLowerCase()] = op;
  }
  const error = { $ref: '#/components/schemas/Error' };
  return {
    openapi: '3.1.0',
    info: {
      title,
      version,
      description: 'Admin API of the Spindle MQTT broker. Errors answer {code, message, error[, field]} with the code also in the HTTP status.',
    },
    tags: [...tags].sort().map((name) => ({ name })),
    security: [{ basic: [] }, { bearer: [] }],
    paths,
    components: {
      securitySchemes: {
        basic: { type: 'http', scheme: 'basic' },
        bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
      },
      schemas: {
        Error: {
          type: 'object',
          required: ['code', 'message', 'error'],
          properties: { code: { type: 'integer' }, message: { type: 'string' }, error: { type: 'string' }, field: { type: 'string' } },
        },
      },
      responses: {
        BadRequest: { description: 'invalid request; `field` names the parameter', content: { 'application/json': { schema: error } } },
        Unauthorized: { description: 'no or bad credentials', content: { 'application/json': { schema: error } } },
        Forbidden: { description: 'the user lacks the role', content: { 'application/json': { schema: error } } },
      },
    },
  };
}
