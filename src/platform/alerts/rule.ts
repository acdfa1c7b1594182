// Validation of alert rule requests (main thread): normalizeAlertRule turns a request body into
// clean rule fields (a PUT keeps what it leaves out), refusing bad input with the field at fault;
// signalAllowed keeps broker-wide signals to platform-wide rules. Also the condition test and the
// alert message, so the engine and the routes describe a rule the same way.
import { AlertRuleError } from './errors.ts';
import {
  AGGREGATIONS,
  AGGREGATIONS_BY_KIND,
  ALERT_STATUSES,
  OPERATORS,
  SEVERITIES,
  SIGNALS,
  type Aggregation,
  type AlertRuleFields,
  type AlertRuleRecord,
  type AlertStatus,
  type Operator,
  type SignalInfo,
} from './types.ts';

export const LIMITS = {
  nameLength: 128,
  descriptionLength: 1024,
  channels: 20,
  channelIdLength: 128,
  windowMin: 1,
  windowMax: 86_400,
} as const;

/** The fields normalizeAlertRule reads. */
export const ALERT_RULE_FIELDS = ['name', 'signal', 'aggregation', 'window', 'operator', 'threshold', 'severity', 'channelIds', 'enabled', 'description'] as const;
/** Fields the routes own (scope, identity, times): normalizeAlertRule neither reads nor refuses them. */
export const ALERT_RULE_ROUTE_FIELDS = ['id', 'organizationId', 'applicationId', 'createTime', 'updateTime'] as const;

const DEFAULT_WINDOW = 60;

const byName = new Map(SIGNALS.map((s) => [s.name, s]));

export function signalInfo(name: string): SignalInfo | undefined {
  return byName.get(name);
}

/** Whether a rule of `organizationId` (null: platform-wide) may watch `signal`: broker signals are
 * for platform-wide rules only; an unknown signal is allowed to nobody. */
export function signalAllowed(signal: string, organizationId: string | null): boolean {
  const info = byName.get(signal);
  if (info === undefined) return false;
  return info.scope === 'tenant' || organizationId === null;
}

/**
 * Checks a rule request body and answers its clean fields. Without `existing` (a create) name,
 * signal, operator and threshold are required; aggregation defaults to rate for a counter and
 * last for a gauge, window to 60 s, severity to warning, channelIds to [], enabled to true,
 * description to ''. With `existing` (an update) a field left out keeps its value.
 * Fields in ALERT_RULE_ROUTE_FIELDS are left to the routes; any other unknown field is refused.
 */
export function normalizeAlertRule(input: unknown, existing?: AlertRuleRecord): AlertRuleFields {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) throw new AlertRuleError('body', 'expected a JSON object');
  const b = input as Record<string, unknown>;
  for (const k of Object.keys(b)) {
    if (!(ALERT_RULE_FIELDS as readonly string[]).includes(k) && !(ALERT_RULE_ROUTE_FIELDS as readonly string[]).includes(k)) {
      throw new AlertRuleError(k, 'unknown field');
    }
  }
  const given = (field: string): boolean => b[field] !== undefined && b[field] !== null;
  const required = (field: string): void => {
    if (!given(field) && existing === undefined) throw new AlertRuleError(field, 'is required');
  };

  required('name');
  const name = given('name') ? text(b, 'name', LIMITS.nameLength, true) : existing!.name;
  if (name.trim().length === 0) throw new AlertRuleError('name', 'must not be blank');

  required('signal');
  const signal = given('signal') ? text(b, 'signal', 200, true) : existing!.signal;
  const info = byName.get(signal);
  if (info === undefined) throw new AlertRuleError('signal', `unknown signal ${JSON.stringify(signal)}; one of ${SIGNALS.map((s) => s.name).join(', ')}`);

  const fits = AGGREGATIONS_BY_KIND[info.kind];
  let aggregation: Aggregation;
  if (given('aggregation')) aggregation = choice(b, 'aggregation', AGGREGATIONS);
  else if (existing !== undefined && fits.includes(existing.aggregation)) aggregation = existing.aggregation;
  else aggregation = info.kind === 'counter' ? 'rate' : 'last';
  if (!fits.includes(aggregation)) {
    throw new AlertRuleError('aggregation', `${aggregation} does not fit ${signal}, a ${info.kind}: use one of ${fits.join(', ')}`);
  }

  let window = existing?.window ?? DEFAULT_WINDOW;
  if (given('window')) {
    const v = b.window;
    if (typeof v !== 'number' || !Number.isInteger(v)) throw new AlertRuleError('window', `expected an integer number of seconds, got ${describe(v)}`);
    if (v < LIMITS.windowMin || v > LIMITS.windowMax) throw new AlertRuleError('window', `must be between ${LIMITS.windowMin} and ${LIMITS.windowMax} seconds, got ${v}`);
    window = v;
  }

  required('operator');
  const operator = given('operator') ? choice(b, 'operator', OPERATORS) : existing!.operator;

  required('threshold');
  let threshold: number;
  if (given('threshold')) {
    const v = b.threshold;
    if (typeof v !== 'number' || !Number.isFinite(v)) throw new AlertRuleError('threshold', `expected a finite number, got ${describe(v)}`);
    threshold = v;
  } else threshold = existing!.threshold;

  const severity = given('severity') ? choice(b, 'severity', SEVERITIES) : (existing?.severity ?? 'warning');

  let channelIds = existing ? [...existing.channelIds] : [];
  if (given('channelIds')) {
    const v = b.channelIds;
    if (!Array.isArray(v)) throw new AlertRuleError('channelIds', `expected an array of channel ids, got ${describe(v)}`);
    if (v.length > LIMITS.channels) throw new AlertRuleError('channelIds', `at most ${LIMITS.channels} channels, got ${v.length}`);
    channelIds = [];
    for (const [i, id] of v.entries()) {
      if (typeof id !== 'string' || id.length === 0 || id.length > LIMITS.channelIdLength) {
        throw new AlertRuleError('channelIds', `item ${i}: expected a channel id (a string of 1 to ${LIMITS.channelIdLength} characters), got ${describe(id)}`);
      }
      if (!channelIds.includes(id)) channelIds.push(id);
    }
  }

  let enabled = existing?.enabled ?? true;
  if (given('enabled')) {
    if (typeof b.enabled !== 'boolean') throw new AlertRuleError('enabled', `expected true or false, got ${describe(b.enabled)}`);
    enabled = b.enabled;
  }

  const description = given('description') ? text(b, 'description', LIMITS.descriptionLength, false) : (existing?.description ?? '');

  return { name, signal, aggregation, window, operator, threshold, severity, channelIds, enabled, description };
}

/** Checks an alert status (the body of a status change). */
export function normalizeAlertStatus(input: unknown, field = 'status'): AlertStatus {
  if (typeof input !== 'string' || !(ALERT_STATUSES as readonly string[]).includes(input)) {
    throw new AlertRuleError(field, `must be one of ${ALERT_STATUSES.join(', ')}, got ${describe(input)}`);
  }
  return input as AlertStatus;
}

export function compare(value: number, operator: Operator, threshold: number): boolean {
  switch (operator) {
    case '>':
      return value > threshold;
    case '>=':
      return value >= threshold;
    case '<':
      return value < threshold;
    case '<=':
      return value <= threshold;
    case '==':
      return value === threshold;
    case '!=':
      return value !== threshold;
  }
}

/** "connections max 120 > 100 over 60 s", with " (organization o1)" for a per-tenant alert. */
export function alertMessage(
  rule: Pick<AlertRuleRecord, 'signal' | 'aggregation' | 'operator' | 'threshold' | 'window'>,
  value: number,
  target: { organizationId: string | null; applicationId: string | null },
): string {
  const per = rule.aggregation === 'rate' ? '/s' : '';
  const where = target.applicationId !== null ? ` (application ${target.applicationId})` : target.organizationId !== null ? ` (organization ${target.organizationId})` : '';
  return `${rule.signal} ${rule.aggregation} ${formatNumber(value)}${per} ${rule.operator} ${formatNumber(rule.threshold)} over ${rule.window} s${where}`;
}

function formatNumber(v: number): string {
  return Number.isInteger(v) ? String(v) : String(Number(v.toPrecision(6)));
}

function text(b: Record<string, unknown>, field: string, max: number, nonEmpty: boolean): string {
  const v = b[field];
  if (typeof v !== 'string') throw new AlertRuleError(field, `expected a string, got ${describe(v)}`);
  if (nonEmpty && v.length === 0) throw new AlertRuleError(field, 'must not be empty');
  if (v.length > max) throw new AlertRuleError(field, `longer than ${max} characters`);
  return v;
}

function choice<T extends string>(b: Record<string, unknown>, field: string, choices: readonly T[]): T {
  const v = b[field];
  if (typeof v !== 'string' || !(choices as readonly string[]).includes(v)) {
    throw new AlertRuleError(field, `must be one of ${choices.join(', ')}, got ${describe(v)}`);
  }
  return v as T;
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return `a string (${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}...` : v)})`;
  if (typeof v === 'number') return `number ${String(v)}`;
  return `${typeof v} ${JSON.stringify(v)}`;
}
