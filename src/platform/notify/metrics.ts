// Owns the notification channels' Prometheus metrics (main thread), updated as deliveries end:
// spindle_notifications_total{type,result} (sent, failed, dropped), spindle_notification_retries_total{type},
// spindle_notification_duration_seconds{type} (a delivery, its retries included) and
// spindle_notifications_in_flight.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

import { CHANNEL_TYPES, type ChannelType } from './types.ts';

export const DELIVERY_RESULTS = ['sent', 'failed', 'dropped'] as const;
export type DeliveryOutcome = (typeof DELIVERY_RESULTS)[number];

export class NotifyMetrics {
  private readonly total: Counter<'type' | 'result'>;
  private readonly retries: Counter<'type'>;
  private readonly duration: Histogram<'type'>;
  private readonly inFlight: Gauge;

  constructor(registry: Registry, inFlight: () => number) {
    this.total = new Counter({
      name: 'spindle_notifications_total',
      help: `Alert notifications by channel type and result: sent, failed (after its retries, or refused for good), dropped (past the bound of deliveries in flight, or after close).`,
      labelNames: ['type', 'result'],
      registers: [registry],
    });
    this.retries = new Counter({
      name: 'spindle_notification_retries_total',
      help: 'Delivery attempts made again after a network error, a timeout, HTTP 5xx or 429, or an SMTP 4xx reply.',
      labelNames: ['type'],
      registers: [registry],
    });
    this.duration = new Histogram({
      name: 'spindle_notification_duration_seconds',
      help: 'Time a notification took to deliver or to fail, its retries and their backoff included.',
      labelNames: ['type'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
      registers: [registry],
    });
    this.inFlight = new Gauge({
      name: 'spindle_notifications_in_flight',
      help: 'Notifications being delivered now (retries and their backoff included).',
      registers: [registry],
      collect() {
        this.set(inFlight());
      },
    });
    // Every series exists from the start, so a rate() over it has a zero to start from.
    for (const type of CHANNEL_TYPES) {
      for (const result of DELIVERY_RESULTS) this.total.inc({ type, result }, 0);
      this.retries.inc({ type }, 0);
    }
  }

  ended(type: ChannelType, outcome: DeliveryOutcome, seconds?: number): void {
    this.total.inc({ type, result: outcome });
    if (seconds !== undefined) this.duration.observe({ type }, seconds);
  }

  retried(type: ChannelType): void {
    this.retries.inc({ type });
  }
}
