// The alert engine's public surface (main thread): the engine, its records and validation, the
// signal window and the metrics.
export { AlertEngine, ALERT_KIND, RULE_KIND, type AlertEngineOptions, type AlertEngineStats } from './engine.ts';
export { AlertRuleError } from './errors.ts';
export {
  ALERT_RULE_INPUT,
  ALERT_RULE_NEW,
  LIMITS as ALERT_RULE_LIMITS,
  alertMessage,
  compare,
  normalizeAlertRule,
  normalizeAlertStatus,
  signalAllowed,
  signalInfo,
} from './rule.ts';
export { SignalWindow, counterIncrease } from './signal-window.ts';
export { registerAlertMetrics } from './metrics.ts';
export * from './types.ts';
