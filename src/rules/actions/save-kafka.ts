// Owns the save_kafka action: one Kafka message per output with its topic, key, value and headers
// from templates (value by default the output as JSON); a batch is one produce call, its messages
// grouped by topic. The output of a traced message gets a `traceparent` header naming its rule's
// span, as the webhook's request does.
import type { KafkaMessage } from '../../sources/types.ts';
import type { Template } from '../template.ts';
import { traceparentOf } from '../trace-output.ts';
import { batchSize, expectSource, optionalString, outputJson, requiredString, sourceId, template, templateMap, type Config } from './action-config.ts';
import type { ActionSpec, CompiledAction } from './types.ts';

const HEADER_NAME = /^[^\u0000-\u001f]{1,255}$/;

export const SAVE_KAFKA: ActionSpec = {
  type: 'save_kafka',
  sourceType: 'kafka',
  description: 'Produces one Kafka message per output; a batch is one produce call grouped by topic.',
  fields: [
    { name: 'source', type: 'string', required: true, description: 'id of the kafka source' },
    { name: 'topic', type: 'string', required: true, description: 'Kafka topic (template)' },
    { name: 'key', type: 'string', required: false, description: 'message key (template); absent: no key' },
    { name: 'value', type: 'string', required: false, description: 'message value (template); absent: the output as JSON' },
    { name: 'headers', type: 'object', required: false, description: '{header: template}' },
    { name: 'batchSize', type: 'integer', required: false, description: 'most messages in one produce call', default: 500 },
  ],
  compile: compileSaveKafka,
};

export function compileSaveKafka(config: Config): CompiledAction {
  const source = sourceId(config);
  const topic = template(requiredString(config, 'topic'), 'topic');
  const keyText = optionalString(config, 'key');
  const key: Template | null = keyText === undefined ? null : template(keyText, 'key');
  const valueText = optionalString(config, 'value');
  const value: Template = valueText === undefined ? outputJson : template(valueText, 'value');
  const headers = templateMap(config, 'headers', (n) => HEADER_NAME.test(n), 'header name');
  const maxBatch = batchSize(config, 500);
  return {
    kind: 'write',
    sourceId: source,
    maxBatch,
    async write(s, outputs) {
      const byTopic = new Map<string, KafkaMessage[]>();
      for (const o of outputs) {
        const message: KafkaMessage = { key: key ? key(o) : null, value: value(o) };
        if (headers) message.headers = Object.fromEntries(headers.map(([name, t]) => [name, t(o)]));
        // The message was traced (OpenTelemetry traces): its consumers continue the trace.
        const traceparent = traceparentOf(o);
        if (traceparent !== undefined) (message.headers ??= {}).traceparent = traceparent;
        const t = topic(o);
        const list = byTopic.get(t);
        if (list) list.push(message);
        else byTopic.set(t, [message]);
      }
      await expectSource(s, 'kafka').send([...byTopic].map(([t, messages]) => ({ topic: t, messages })));
    },
  };
}
