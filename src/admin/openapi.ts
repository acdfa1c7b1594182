// The OpenAPI 3.1 document of the admin API, generated from the route table itself (so it can
// never list a route that does not exist, or miss one that does).
import type { Route } from './http.ts';

export function openApiDocument(routes: readonly Route[], version: string): Record<string, unknown> {
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
      op.parameters = Object.entries(r.query).map(([name, { required, ...schema }]) => ({ name, in: 'query', required: required ?? false, schema }));
    }
    if (r.body) op.requestBody = { required: true, content: { 'application/json': { schema: r.body } } };
    (paths[r.path] ??= {})[r.method.toLowerCase()] = op;
  }
  const error = { $ref: '#/components/schemas/Error' };
  return {
    openapi: '3.1.0',
    info: {
      title: 'Spindle admin API',
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
