// Owns a command's MQTT mapping: `mqttTopic` (a template over the source record's fields, e.g.
// `devices/${key}/${value.site}`), `payload` (a template; absent: the record's value as it is),
// `qos` (default 1: the bridge is at least once) and `retain`. The templates are the rule
// engine's (parsed once; the republish action's checks: no wildcard in the literal text, no $
// topic). A record whose topic comes out invalid, or whose payload is larger than the broker
// takes, is a per-record failure with its reason, never a crash. A record's `traceparent` and
// `tracestate` headers go with its message, which continues that trace (OpenTelemetry traces).
import { topicNameProblem } from '../../auth/topic-filter.ts';
import { compileRepublish } from '../../rules/actions/republish.ts';
import { ActionConfigError, type CompiledRepublish } from '../../rules/actions/types.ts';
import { CommandError } from './errors.ts';
import type { InboundMessage, InboundRecord } from './types.ts';

export const MAPPING_FIELDS = ['mqttTopic', 'payload', 'qos', 'retain'] as const;

/** Why a record was not published (the `reason` label of spindle_command_failed_total). */
export type FailureReason = 'topic' | 'too_large';
export const FAILURE_REASONS: readonly FailureReason[] = ['topic', 'too_large'];

export interface MappingLimits {
  /** limits.maxTopicLevels */
  maxTopicLevels: number;
  /** limits.maxPacketSize: a payload larger than this is refused. */
  maxPayload: number;
}

export interface Unmapped {
  reason: FailureReason;
  message: string;
}

export class Mapping {
  private constructor(
    private readonly compiled: CompiledRepublish,
    private readonly limits: MappingLimits,
  ) {}

  /** Validates the mapping fields of a command's config (400s name `config.<field>`). */
  static parse(config: Record<string, unknown>, limits: MappingLimits): Mapping {
    if (config.mqttTopic === undefined || config.mqttTopic === null) throw new CommandError(400, 'config.mqttTopic', 'config.mqttTopic: is required (the MQTT topic template, e.g. "kafka/${topic}/${key}")');
    try {
      return new Mapping(compileRepublish({ topic: config.mqttTopic, payload: config.payload, qos: config.qos ?? 1, retain: config.retain }), limits);
    } catch (err) {
      if (!(err instanceof ActionConfigError)) throw err;
      const field = `config.${err.field === 'topic' ? 'mqttTopic' : err.field}`;
      throw new CommandError(400, field, `${field}: ${err.message.slice(err.field.length + 2)}`);
    }
  }

  /** The message for `record`, or why it cannot be published. */
  map(record: InboundRecord): InboundMessage | Unmapped {
    const topic = this.compiled.topic(record.fields);
    const problem = this.topicProblem(topic);
    if (problem !== null) return { reason: 'topic', message: `topic ${JSON.stringify(topic.slice(0, 200))}: ${problem}` };
    const payload = this.compiled.payload === null ? record.value : Buffer.from(this.compiled.payload(record.fields), 'utf8');
    if (payload.length > this.limits.maxPayload) return { reason: 'too_large', message: `payload of ${payload.length} bytes is larger than limits.maxPacketSize (${this.limits.maxPayload})` };
    // The source's W3C trace context goes along, checked where the message is made (the worker's
    // withSourceTrace, broker/trace-context.ts).
    const { traceparent, tracestate } = record.headers;
    return { topic, payload, qos: this.compiled.qos, retain: this.compiled.retain, expiresAt: 0, props: null, traceparent, tracestate };
  }

  private topicProblem(topic: string): string | null {
    if (topic.startsWith('$')) return 'starts with $ (topics of the broker)';
    const problem = topicNameProblem(topic);
    if (problem !== undefined) return problem;
    let levels = 1;
    for (let i = topic.indexOf('/'); i !== -1; i = topic.indexOf('/', i + 1)) levels++;
    return levels > this.limits.maxTopicLevels ? `more than ${this.limits.maxTopicLevels} levels (limits.maxTopicLevels)` : null;
  }
}
