// Owns one attempt of a webhook channel (main thread): the notice as it is, JSON, POSTed to the
// configured URL with the configured headers (content-type application/json, user-agent spindle).
import { postJson } from './http-post.ts';
import type { AttemptContext } from './attempt.ts';
import { TIMEOUT_MS, type AlertNotice, type WebhookConfig } from './types.ts';

export function sendWebhook(config: WebhookConfig, notice: AlertNotice, ctx: AttemptContext): Promise<number> {
  return postJson({
    url: config.url,
    body: notice,
    headers: config.headers ?? {},
    timeoutMs: config.timeoutMs ?? TIMEOUT_MS.default,
    closing: ctx.closing,
    retryAfterCapMs: ctx.retryAfterCapMs,
  });
}
