// Owns delivering alert notices over the channels (main thread): one delivery per send(), its
// attempts, the backoff between them, the bound on deliveries in flight, the metrics and the log
// lines, and shutting down. Deliveries never throw: each answers a DeliveryResult.
//
// Retries: after a network error, a timeout, HTTP 5xx or 429, or an SMTP 4xx reply, up to the
// channel's `retries` times, waiting backoffBaseMs, then twice as long each time (capped at
// backoffMaxMs), or what Retry-After asks (capped at retryAfterCapMs). Any other refusal ends the
// delivery at once. At most maxInFlight deliveries run at a time (retries and their waits
// included): past it a notice is dropped (result "dropped", counted, logged at most once per
// DROP_LOG_INTERVAL_MS with the number dropped), so a dead receiver holds a bounded amount of
// memory. close() stops retries at once, gives attempts in progress a grace period, then abandons
// them and closes the SMTP transports.
import { performance } from 'node:perf_hooks';

import type { Registry } from 'prom-client';

import type { Logger } from '../../log/index.ts';
import type { AttemptContext } from './attempt.ts';
import { BACKOFF_BASE_MS, BACKOFF_MAX_MS, backoffDelay, sleep } from './backoff.ts';
import { sendEmail } from './email.ts';
import { AttemptError } from './errors.ts';
import { NotifyMetrics } from './metrics.ts';
import { testNotice } from './notice.ts';
import { sendSlack } from './slack.ts';
import { SmtpTransports } from './smtp-transports.ts';
import { RETRIES, type AlertNotice, type ChannelSpec, type DeliveryResult, type EmailConfig, type SlackConfig, type WebhookConfig } from './types.ts';
import { sendWebhook } from './webhook.ts';

export const DEFAULT_MAX_IN_FLIGHT = 64;
export const DEFAULT_RETRY_AFTER_CAP_MS = 60_000;
export const DEFAULT_CLOSE_GRACE_MS = 2000;
const DROP_LOG_INTERVAL_MS = 10_000;

export interface NotifierOptions {
  /** Deliveries running at once at most (default 64); past it a notice is dropped. */
  maxInFlight?: number;
  /** First wait before a retry (default 500 ms), doubled for each further retry. */
  backoffBaseMs?: number;
  /** Longest wait between attempts (default 30 s). */
  backoffMaxMs?: number;
  /** Retry-After is believed up to this long (default 60 s). */
  retryAfterCapMs?: number;
}

export class Notifier {
  private readonly log: Logger;
  private readonly metrics: NotifyMetrics;
  private readonly transports = new SmtpTransports();
  private readonly maxInFlight: number;
  private readonly backoffBaseMs: number;
  private readonly backoffMaxMs: number;
  private readonly retryAfterCapMs: number;
  /** Deliveries running; each removes itself when it ends. */
  private readonly running = new Set<Promise<DeliveryResult>>();
  /** Aborted by close(): no more retries (waits end at once). */
  private readonly stopping = new AbortController();
  /** Aborted by close() after the grace period: attempts in progress are abandoned. */
  private readonly abandoning = new AbortController();
  private droppedSinceLog = 0;
  private lastDropLog = 0;

  constructor(logger: Logger, registry: Registry, options: NotifierOptions = {}) {
    this.log = logger.named('notify');
    this.maxInFlight = options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT;
    this.backoffBaseMs = options.backoffBaseMs ?? BACKOFF_BASE_MS;
    this.backoffMaxMs = options.backoffMaxMs ?? BACKOFF_MAX_MS;
    this.retryAfterCapMs = options.retryAfterCapMs ?? DEFAULT_RETRY_AFTER_CAP_MS;
    this.metrics = new NotifyMetrics(registry, () => this.running.size);
  }

  /** Deliveries running now. */
  get inFlight(): number {
    return this.running.size;
  }

  /** Delivers `notice` over the channel `spec` (normalized by normalizeChannel), with its retries. */
  send(spec: ChannelSpec, notice: AlertNotice): Promise<DeliveryResult> {
    return this.start(spec, notice, spec.config.retries ?? RETRIES.default);
  }

  /** The test action: a test notice (testNotice) over `spec`, one attempt and no retries, so the
   * answer comes within the channel's timeout. Counted in the metrics like any delivery. */
  sendTest(spec: ChannelSpec, nodeName: string): Promise<DeliveryResult> {
    return this.start(spec, testNotice(nodeName), 0);
  }

  /** Stops retries at once, waits up to `graceMs` for attempts in progress, abandons what is
   * left (answered as failed), and closes the SMTP transports. Sends after close are dropped. */
  async close(graceMs = DEFAULT_CLOSE_GRACE_MS): Promise<void> {
    if (this.stopping.signal.aborted) return;
    this.stopping.abort();
    if (this.running.size > 0) {
      const grace = new AbortController();
      await Promise.race([Promise.allSettled([...this.running]), sleep(graceMs, grace.signal)]);
      grace.abort();
    }
    this.abandoning.abort();
    await Promise.allSettled([...this.running]);
    this.transports.close();
    this.flushDropLog(true);
  }

  private start(spec: ChannelSpec, notice: AlertNotice, retries: number): Promise<DeliveryResult> {
    if (this.stopping.signal.aborted) return Promise.resolve(this.drop(spec, notice, 'the notifier is closed'));
    if (this.running.size >= this.maxInFlight) {
      return Promise.resolve(this.drop(spec, notice, `${this.running.size} notifications in flight (the bound)`));
    }
    const delivery: Promise<DeliveryResult> = this.deliver(spec, notice, retries).finally(() => this.running.delete(delivery));
    this.running.add(delivery);
    return delivery;
  }

  private async deliver(spec: ChannelSpec, notice: AlertNotice, retries: number): Promise<DeliveryResult> {
    const started = performance.now();
    const ctx: AttemptContext = { closing: this.abandoning.signal, retryAfterCapMs: this.retryAfterCapMs };
    let attempts = 0;
    let last: AttemptError;
    for (;;) {
      attempts++;
      try {
        const status = await this.attempt(spec, notice, ctx);
        const ms = performance.now() - started;
        this.metrics.ended(spec.type, 'sent', ms / 1000);
        this.log.debug('notification sent', { ...about(spec, notice), attempts, status, ms: Math.round(ms) });
        return { ok: true, attempts, ...(status !== undefined ? { status } : {}), ms: Math.round(ms) };
      } catch (err) {
        last = err instanceof AttemptError ? err : new AttemptError(`unexpected: ${err instanceof Error ? err.message : String(err)}`, false);
      }
      if (!last.retryable || attempts > retries) break;
      if (this.stopping.signal.aborted) {
        last = new AttemptError(`${last.message} (not retried: the notifier closed)`, false, last.status);
        break;
      }
      const delay = last.retryAfterMs ?? backoffDelay(attempts, this.backoffBaseMs, this.backoffMaxMs);
      this.metrics.retried(spec.type);
      this.log.debug('notification attempt failed, retrying', { ...about(spec, notice), attempt: attempts, error: last.message, delayMs: delay });
      await sleep(delay, this.stopping.signal);
      if (this.stopping.signal.aborted) {
        last = new AttemptError(`${last.message} (not retried: the notifier closed)`, false, last.status);
        break;
      }
    }
    const ms = performance.now() - started;
    this.metrics.ended(spec.type, 'failed', ms / 1000);
    this.log.warn('notification failed', { ...about(spec, notice), attempts, error: last.message, status: last.status });
    return { ok: false, attempts, error: last.message, ...(last.status !== undefined ? { status: last.status } : {}), ms: Math.round(ms) };
  }

  private attempt(spec: ChannelSpec, notice: AlertNotice, ctx: AttemptContext): Promise<number | undefined> {
    switch (spec.type) {
      case 'webhook':
        return sendWebhook(spec.config as WebhookConfig, notice, ctx);
      case 'slack':
        return sendSlack(spec.config as SlackConfig, notice, ctx);
      case 'email':
        return sendEmail(spec.config as EmailConfig, notice, ctx, this.transports);
    }
  }

  private drop(spec: ChannelSpec, notice: AlertNotice, why: string): DeliveryResult {
    this.metrics.ended(spec.type, 'dropped');
    this.droppedSinceLog++;
    this.flushDropLog(false, { ...about(spec, notice), reason: why });
    return { ok: false, attempts: 0, error: `dropped: ${why}`, ms: 0 };
  }

  /** One warn line for the first drop, then at most one per interval with the count since. */
  private flushDropLog(final: boolean, fields: Record<string, unknown> = {}): void {
    if (this.droppedSinceLog === 0) return;
    const now = Date.now();
    if (!final && now - this.lastDropLog < DROP_LOG_INTERVAL_MS) return;
    this.log.warn('notifications dropped', { ...fields, dropped: this.droppedSinceLog });
    this.droppedSinceLog = 0;
    this.lastDropLog = now;
  }
}

/** What a log line says of a delivery: never a URL's path or query (a Slack webhook URL is its
 * own secret), nor a password. */
function about(spec: ChannelSpec, notice: AlertNotice): Record<string, unknown> {
  const target = spec.type === 'email'
    ? `${(spec.config as EmailConfig).host}:${(spec.config as EmailConfig).port}`
    : new URL((spec.config as WebhookConfig | SlackConfig).url).origin;
  return { type: spec.type, target, kind: notice.kind, rule: notice.ruleId, alert: notice.alertId };
}
