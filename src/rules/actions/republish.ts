// Owns the republish action's config: {topic (template), payload? (template; default the output as
// JSON), qos 0..2, retain}. Republishing runs in the worker threads, which call compileRepublish on
// the config themselves (compiled templates cannot cross threads); on the main thread the spec
// only validates. The topic's literal text may not hold wildcards [MQTT-3.3.2-2] and may not start
// a $ topic (the broker's own).
import { constant, intField, optionalString, requiredString, template, boolField, type Config } from './action-config.ts';
import { ActionConfigError, type ActionSpec, type CompiledRepublish } from './types.ts';

export const REPUBLISH: ActionSpec = {
  type: 'republish',
  sourceType: null,
  description: 'Publishes a message built from the output to a topic of this broker.',
  fields: [
    { name: 'topic', type: 'string', required: true, description: 'topic to publish to (template, no wildcards)' },
    { name: 'payload', type: 'string', required: false, description: 'payload (template); absent: the output as JSON' },
    { name: 'qos', type: 'integer', required: false, description: 'QoS 0, 1 or 2', default: 0 },
    { name: 'retain', type: 'boolean', required: false, description: 'publish as a retained message', default: false },
  ],
  compile: compileRepublish,
};

export function compileRepublish(config: Config): CompiledRepublish {
  const topicText = requiredString(config, 'topic');
  const literal = topicText.replace(/\$\{[^}]*\}/g, '');
  if (/[+#\u0000]/.test(literal)) throw new ActionConfigError('topic', 'must not contain wildcards (+, #) or NUL');
  if (topicText.startsWith('$') && !topicText.startsWith('${')) throw new ActionConfigError('topic', 'must not start with $ (topics of the broker)');
  const topic = template(topicText, 'topic');
  if (constant(topicText, 'topic') && topicText.length > 65_535) throw new ActionConfigError('topic', 'is longer than 65535 bytes');
  const payloadText = optionalString(config, 'payload');
  const qos = intField(config, 'qos', 0, 0, 2) as 0 | 1 | 2;
  return {
    kind: 'republish',
    topic,
    payload: payloadText === undefined ? null : template(payloadText, 'payload'),
    qos,
    retain: boolField(config, 'retain', false),
  };
}
