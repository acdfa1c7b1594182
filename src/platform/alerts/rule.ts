// Validation of alert rule requests (main thread): ALERT_RULE_INPUT is the schema of a rule's
// fields (the routes' too); normalizeAlertRule checks a request body against it and turns it into
// clean rule fields (a PUT keeps what it leaves out), refusing bad input with the field at fault;
// signalAllowed keeps broker-wide signals to platform-wide rules. Also the condition test and the
// alert message, so the engine and the routes describe a rule the same way.
import { Type, type Static, type TNull, type TOptional, type TUnion } from '@sinclair/typebox';

import { choice as oneOf, compileSchema, orNull, PATTERN_MESSAGE, type Checker } from '../../schema/check.ts';
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

/** An alert rule's fields, each optional (a create requires name, signal, operator and threshold;
 * an update keeps what it leaves out) and null when absent. The route fields (id, organizationId,
 * applicationId, times) are the routes': taken here, neither read nor refused. Unknown fields are
 * refused. */
const RULE_FIELDS = {
  name: Type.String({ minLength: 1, maxLength: LIMITS.nameLength, pattern: '\\S', [PATTERN_MESSAGE]: 'must not be blank' }),
  signal: Type.String({ minLength: 1, maxLength: 200, description: 'GET /api/v1/alert-rules/signals' }),
  aggregation: oneOf(AGGREGATIONS, { description: 'default: rate for a counter, last for a gauge' }),
  window: Type.Integer({ minimum: LIMITS.windowMin, maximum: LIMITS.windowMax, description: 'seconds (default 60)' }),
  operator: oneOf(OPERATORS),
  threshold: Type.Number(),
  severity: oneOf(SEVERITIES, { description: 'default warning' }),
  channelIds: Type.Array(Type.String({ minLength: 1, maxLength: LIMITS.channelIdLength }), { maxItems: LIMITS.channels }),
  enabled: Type.Boolean({ description: 'default true' }),
  description: Type.String({ maxLength: LIMITS.descriptionLength }),
};
const ROUTE_FIELDS = {
  id: Type.Optional(Type.Unknown()),
  organizationId: Type.Optional(orNull(Type.String({ description: 'SystemAdmin: null for a platform rule' }))),
  applicationId: Type.Optional(orNull(Type.String())),
  createTime: Type.Optional(Type.Unknown()),
  updateTime: Type.Optional(Type.Unknown()),
};

type Fields = typeof RULE_FIELDS;
const optional = Object.fromEntries(Object.entries(RULE_FIELDS).map(([k, v]) => [k, Type.Optional(orNull(v))])) as { [K in keyof Fields]: TOptional<TUnion<[Fields[K], TNull]>> };

export const ALERT_RULE_INPUT = Type.Object({ ...optional, ...ROUTE_FIELDS }, { additionalProperties: false });
/** A new rule, as the add route documents and checks it. */
export const ALERT_RULE_NEW = Type.Object(
  { ...optional, name: RULE_FIELDS.name, signal: RULE_FIELDS.signal, operator: RULE_FIELDS.operator, threshold: RULE_FIELDS.threshold, ...ROUTE_FIELDS },
  { additionalProperties: false },
);
export type AlertRuleInput = Static<typeof ALERT_RULE_INPUT>;

const checkRule: Checker<AlertRuleInput> = compileSchema(ALERT_RULE_INPUT, { refuse: (field, reason) => new AlertRuleError(field, reason) });

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
  checkRule(input);
  const b = input;
  const required = <K extends 'name' | 'signal' | 'operator' | 'threshold'>(field: K): NonNullable<AlertRuleInput[K]> => {
    const v = b[field] ?? existing?.[field];
    if (v === undefined || v === null) throw new AlertRuleError(field, 'is required');
    return v as NonNullable<AlertRuleInput[K]>;
  };
  const name = required('name');
  const signal = required('signal');
  const info = byName.get(signal);
  if (info === undefined) throw new AlertRuleError('signal', `unknown signal ${JSON.stringify(signal)}; one of ${SIGNALS.map((s) => s.name).join(', ')}`);

  // The aggregation must fit the signal's kind (a new signal may make the old one unfit).
  const fits = AGGREGATIONS_BY_KIND[info.kind];
  let aggregation: Aggregation;
  if (b.aggregation != null) aggregation = b.aggregation;
  else if (existing !== undefined && fits.includes(existing.aggregation)) aggregation = existing.aggregation;
  else aggregation = info.kind === 'counter' ? 'rate' : 'last';
  if (!fits.includes(aggregation)) {
    throw new AlertRuleError('aggregation', `${aggregation} does not fit ${signal}, a ${info.kind}: use one of ${fits.join(', ')}`);
  }

  return {
    name,
    signal,
    aggregation,
    window: b.window ?? existing?.window ?? DEFAULT_WINDOW,
    operator: required('operator'),
    threshold: required('threshold'),
    severity: b.severity ?? existing?.severity ?? 'warning',
    channelIds: b.channelIds ? [...new Set(b.channelIds)] : existing ? [...existing.channelIds] : [],
    enabled: b.enabled ?? existing?.enabled ?? true,
    description: b.description ?? existing?.description ?? '',
  };
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

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return `a string (${JSON.stringify(v.length > 40 ? `${v.slice(0, 40)}...` : v)})`;
  if (typeof v === 'number') return `number ${String(v)}`;
  return `${typeof v} ${JSON.stringify(v)}`;
}
