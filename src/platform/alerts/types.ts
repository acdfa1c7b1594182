// The alert engine's records and its signal catalogue (main thread): what a signal sample holds,
// which signals a rule may watch (SIGNALS), an alert rule and an alert as stored and answered.
// The routes, the signal source and the notification delivery (the lead's side) share these.

/** A signal value set read at one instant. Counters are cumulative (monotonic; a reset — value below
 * the previous — restarts the count from the new value), gauges are current values. */
export interface SignalSample {
  /** ms since the epoch. */
  time: number;
  /** signal name -> value. */
  broker: Record<string, number>;
  /** organizationId -> tenant signal values. */
  organizations: Map<string, Record<string, number>>;
  /** applicationId -> tenant signal values. */
  applications: Map<string, Record<string, number>>;
}

export type SignalKind = 'counter' | 'gauge';
export type SignalScope = 'broker' | 'tenant';

export interface SignalInfo {
  name: string;
  kind: SignalKind;
  scope: SignalScope;
  unit: string;
  description: string;
}

export const SIGNALS: readonly SignalInfo[] = [
  // broker scope (SystemAdmin rules only)
  { name: 'connections', kind: 'gauge', scope: 'broker', unit: 'connections', description: 'clients connected' },
  { name: 'messages.received', kind: 'counter', scope: 'broker', unit: 'messages', description: 'PUBLISH packets received from clients' },
  { name: 'messages.sent', kind: 'counter', scope: 'broker', unit: 'messages', description: 'PUBLISH packets sent to clients' },
  { name: 'messages.dropped', kind: 'counter', scope: 'broker', unit: 'messages', description: 'messages dropped (queues full, expired, no room)' },
  { name: 'auth.failures', kind: 'counter', scope: 'broker', unit: 'connections', description: 'connections refused by authentication' },
  { name: 'acl.denied', kind: 'counter', scope: 'broker', unit: 'requests', description: 'publishes and subscriptions denied by the ACL' },
  { name: 'rules.actions.failed', kind: 'counter', scope: 'broker', unit: 'outputs', description: 'rule action outputs that failed to write' },
  { name: 'workers.down', kind: 'gauge', scope: 'broker', unit: 'workers', description: 'worker threads not running' },
  { name: 'node.down', kind: 'gauge', scope: 'broker', unit: 'nodes', description: 'nodes of the cluster down (0 on a single node)' },
  { name: 'overload.workers', kind: 'gauge', scope: 'broker', unit: 'workers', description: 'worker threads overloaded (refusing new connections with 0x89 Server busy: event-loop lag, heap or RSS above the overload marks)' },
  { name: 'overload.refused', kind: 'counter', scope: 'broker', unit: 'connections', description: 'CONNECTs refused because their worker was overloaded' },
  { name: 'rate.throttled', kind: 'counter', scope: 'broker', unit: 'pauses', description: 'times a connection stopped reading because it was over a rate limit (its own, its endpoint\'s total, or its tenant\'s licence)' },
  // tenant scope (any rule; an organization's rule sees only its own organization's values)
  { name: 'tenant.connections', kind: 'gauge', scope: 'tenant', unit: 'connections', description: "the tenant's clients connected" },
  { name: 'tenant.messages.received', kind: 'counter', scope: 'tenant', unit: 'messages', description: "PUBLISH packets received from the tenant's clients" },
  { name: 'tenant.acl.denied', kind: 'counter', scope: 'tenant', unit: 'requests', description: "the tenant's publishes and subscriptions denied by the ACL" },
  { name: 'tenant.throttled', kind: 'counter', scope: 'tenant', unit: 'messages', description: "times a connection of the tenant was paused for the rest of a second, over its licence's message rate" },
  { name: 'tenant.quota.refused', kind: 'counter', scope: 'tenant', unit: 'requests', description: "the tenant's CONNECTs refused past its licence's connections (0x97)" },
  { name: 'license.connections.usage', kind: 'gauge', scope: 'tenant', unit: 'percent', description: "connections used of the licence's maximum" },
  { name: 'license.messages.usage', kind: 'gauge', scope: 'tenant', unit: 'percent', description: "messages per second used of the licence's rate (over the last sampling interval)" },
];

export const AGGREGATIONS = ['rate', 'increase', 'avg', 'max', 'min', 'last'] as const;
export type Aggregation = (typeof AGGREGATIONS)[number];
/** Which aggregations fit a signal's kind: a counter's level means nothing, a gauge's rate little. */
export const AGGREGATIONS_BY_KIND: Readonly<Record<SignalKind, readonly Aggregation[]>> = {
  counter: ['rate', 'increase'],
  gauge: ['avg', 'max', 'min', 'last'],
};

export const OPERATORS = ['>', '>=', '<', '<=', '==', '!='] as const;
export type Operator = (typeof OPERATORS)[number];

export const SEVERITIES = ['info', 'warning', 'critical'] as const;
export type Severity = (typeof SEVERITIES)[number];

export const ALERT_STATES = ['firing', 'resolved'] as const;
export type AlertState = (typeof ALERT_STATES)[number];

export const ALERT_STATUSES = ['unhandled', 'handled', 'ignored'] as const;
export type AlertStatus = (typeof ALERT_STATUSES)[number];

export interface AlertRuleRecord {
  id: string;
  name: string;
  /** null: a platform-wide rule (SystemAdmin). */
  organizationId: string | null;
  /** Tenant signals: narrow to one application of the organization. */
  applicationId: string | null;
  signal: string;
  /** rate (per second) and increase for counters; avg/max/min/last for gauges. */
  aggregation: Aggregation;
  /** Seconds, 1..86400. */
  window: number;
  operator: Operator;
  threshold: number;
  severity: Severity;
  /** Notification channels (the routes check they exist and are in scope). */
  channelIds: string[];
  enabled: boolean;
  description: string;
  createTime: string;
  updateTime: string;
}

/** The fields of a rule a request sets (normalizeAlertRule's answer); the routes add the rest. */
export type AlertRuleFields = Omit<AlertRuleRecord, 'id' | 'createTime' | 'updateTime' | 'organizationId' | 'applicationId'>;

export interface AlertRecord {
  id: string;
  ruleId: string;
  ruleName: string;
  organizationId: string | null;
  applicationId: string | null;
  signal: string;
  severity: Severity;
  state: AlertState;
  status: AlertStatus;
  /** The last value found firing. */
  value: number;
  threshold: number;
  /** e.g. "connections max 120 > 100 over 60 s". */
  message: string;
  firstTime: string;
  lastTime: string;
  resolvedTime: string | null;
  /** Evaluations that found it firing. */
  occurrences: number;
  statusChangedBy: string | null;
  statusTime: string | null;
  createTime: string;
}

export interface AlertFilter {
  /** undefined: every alert; null: platform-wide alerts only; a string: that organization's. */
  organizationId?: string | null;
  ruleId?: string;
  state?: AlertState;
  status?: AlertStatus;
  severity?: Severity;
  /** ms since the epoch, on firstTime (inclusive). */
  from?: number;
  /** ms since the epoch, on firstTime (inclusive). */
  to?: number;
}
