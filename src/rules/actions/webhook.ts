// Owns the webhook action: one HTTP request per output to an http source, with path, headers and
// body from templates (body by default the output as JSON). A batch's requests are sent at once;
// the source's pool bounds how many are in flight. Each output's outcome counts on its own: a
// refused request (4xx) is not retried, a transient one (5xx, 429, network) is retried alone
// (PartialWriteError), so receivers that answered are not sent the message again.
import { SourceError } from '../../sources/types.ts';
import { traceparentOf } from '../trace-output.ts';
import type { Template } from '../template.ts';
import { batchSize, expectSource, optionalString, outputJson, sourceId, template, templateMap, type Config } from './action-config.ts';
import { ActionConfigError, PartialWriteError, type ActionSpec, type CompiledAction, type Output } from './types.ts';

const METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE']);
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

export const WEBHOOK: ActionSpec = {
  type: 'webhook',
  sourceType: 'http',
  description: 'Sends one HTTP request per output to an http source.',
  fields: [
    { name: 'source', type: 'string', required: true, description: 'id of the http source' },
    { name: 'path', type: 'string', required: false, description: "appended to the source's URL (template)" },
    { name: 'method', type: 'string', required: false, description: "GET, POST, PUT, PATCH or DELETE; absent: the source's" },
    { name: 'headers', type: 'object', required: false, description: '{header: template}, over the source headers' },
    { name: 'body', type: 'string', required: false, description: 'request body (template); absent: the output as JSON' },
    { name: 'batchSize', type: 'integer', required: false, description: 'most outputs taken at once', default: 100 },
  ],
  compile: compileWebhook,
};

export function compileWebhook(config: Config): CompiledAction {
  const source = sourceId(config);
  const pathText = optionalString(config, 'path');
  const path: Template | null = pathText === undefined ? null : template(pathText, 'path');
  const methodText = optionalString(config, 'method');
  const method = methodText?.toUpperCase();
  if (method !== undefined && !METHODS.has(method)) throw new ActionConfigError('method', `must be one of ${[...METHODS].join(', ')}`);
  const headers = templateMap(config, 'headers', (n) => HEADER_NAME.test(n), 'header name');
  const bodyText = optionalString(config, 'body');
  const body: Template = bodyText === undefined ? outputJson : template(bodyText, 'body');
  const jsonBody = bodyText === undefined;
  const maxBatch = batchSize(config, 100, 1000);
  return {
    kind: 'write',
    sourceId: source,
    maxBatch,
    async write(s, outputs) {
      const http = expectSource(s, 'http');
      const results = await Promise.allSettled(outputs.map((o) => {
        const h: Record<string, string> = jsonBody ? { 'content-type': 'application/json' } : {};
        if (headers) for (const [name, t] of headers) h[name] = t(o);
        // The message was traced (OpenTelemetry traces): the receiver continues its trace.
        const traceparent = traceparentOf(o);
        if (traceparent !== undefined) h.traceparent = traceparent;
        return http.request({ ...(method ? { method } : {}), path: path ? path(o) : '', headers: h, body: body(o) });
      }));
      let refused = 0;
      let refusedError: Error | null = null;
      const retry: Output[] = [];
      let retryError: Error | null = null;
      results.forEach((r, i) => {
        if (r.status === 'fulfilled') return;
        const err = r.reason instanceof Error ? r.reason : new Error(String(r.reason));
        if (err instanceof SourceError && err.transient) {
          retry.push(outputs[i]);
          retryError ??= err;
        } else {
          refused++;
          refusedError ??= err;
        }
      });
      if (refused === 0 && retry.length === 0) return;
      // Every request failed the same way: the batch's error, retried or refused as a whole by the
      // pipeline (which also retries refusals while the source is down, e.g. a TLS failure).
      if (refused === 0) throw retryError;
      if (retry.length === 0 && refused === outputs.length) throw refusedError;
      throw new PartialWriteError(refused, refusedError, retry, retryError);
    },
  };
}
