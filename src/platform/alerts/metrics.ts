// The alert engine's Prometheus metrics (main thread): gauges and counters read from the engine's
// stats when scraped, and the evaluation duration observed as each evaluation ends.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

import type { AlertEngine, AlertEngineStats } from './engine.ts';

/** Registers the metrics of `engine` on `registry`; answers the function that stops observing it. */
export function registerAlertMetrics(registry: Registry, engine: AlertEngine): () => void {
  const gauge = (name: string, help: string, value: (s: AlertEngineStats) => number) =>
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(value(engine.stats()));
      },
    });
  const counter = (name: string, help: string, value: (s: AlertEngineStats) => number) =>
    new Counter({
      name,
      help,
      registers: [registry],
      collect() {
        this.reset();
        this.inc(value(engine.stats()));
      },
    });
  gauge('spindle_alerts_firing', 'Alerts firing now.', (s) => s.firing);
  gauge('spindle_alerts_kept', 'Alerts kept (firing and resolved), at most alerts.maxAlerts.', (s) => s.alerts);
  gauge('spindle_alert_rules', 'Alert rules (enabled or not).', (s) => s.rules);
  gauge('spindle_alert_window_buckets', 'Buckets of signal values kept for the alert rules\' windows (at most 600 per rule and target by default).', (s) => s.buckets);
  counter('spindle_alerts_fired_total', 'Alerts that fired (a new alert; a condition still true is not counted again).', (s) => s.fired);
  counter('spindle_alerts_resolved_total', 'Firing alerts resolved (condition cleared, value missing, rule disabled, changed or deleted).', (s) => s.resolved);
  counter('spindle_alert_evaluations_total', 'Evaluations of the alert rules (one signal sample each).', (s) => s.evaluations);
  counter('spindle_alert_evaluation_errors_total', 'Evaluations that failed (the signal sample could not be read).', (s) => s.evaluationErrors);
  counter('spindle_alert_evaluations_skipped_total', 'Timer ticks skipped because the evaluation before was still writing.', (s) => s.evaluationsSkipped);
  counter('spindle_alerts_pruned_total', 'Resolved alerts dropped (oldest first) to stay within alerts.maxAlerts.', (s) => s.pruned);
  counter('spindle_alerts_refused_total', 'New alerts not recorded (nor notified) because alerts.maxAlerts alerts were all firing.', (s) => s.refused);
  counter('spindle_alert_store_errors_total', 'Alert writes and deletes the store refused (retried at the next write).', (s) => s.storeErrors);
  counter('spindle_alert_notify_errors_total', 'Alert notifications whose notify call threw.', (s) => s.notifyErrors);
  const duration = new Histogram({
    name: 'spindle_alert_evaluation_duration_seconds',
    help: 'Time an evaluation of every alert rule took, writes included.',
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5],
    registers: [registry],
  });
  return engine.onEvaluation((seconds) => duration.observe(seconds));
}
