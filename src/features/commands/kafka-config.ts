// Owns the config of a KAFKA command: the connection as a kafka data source has it (bootstrapServers
// "h:p,h:p" or an array, or url, or host/port; sasl plain/scram, tls or its kafkajs name ssl;
// clientId; timeouts: src/sources/kafka-config.ts reads them), the topics to consume (`topic`, or
// `topics`), the consumer group (default `spindle-command-<id>`), fromBeginning for a group with no
// committed offset, and batchSize (records published per batch at most).
import { parseKafkaConfig, type KafkaConfig } from '../../sources/kafka-config.ts';
import { intField, optionalString, type Raw } from '../../sources/config-fields.ts';
import { SourceConfigError } from '../../sources/types.ts';

export const KAFKA_FIELDS = ['bootstrapServers', 'url', 'host', 'port', 'clientId', 'tls', 'ssl', 'sasl', 'username', 'password', 'connectTimeout', 'requestTimeout', 'topic', 'topics', 'groupId', 'fromBeginning', 'batchSize'] as const;

const KAFKA_TOPIC = /^[A-Za-z0-9._-]{1,249}$/;

export interface KafkaCommandConfig {
  connection: KafkaConfig;
  topics: string[];
  /** null: `spindle-command-<command id>`. */
  groupId: string | null;
  fromBeginning: boolean;
  batchSize: number;
}

export function parseKafkaCommandConfig(raw: Raw): KafkaCommandConfig {
  const { ssl, topic, topics, groupId, fromBeginning, batchSize, ...connection } = raw;
  if (ssl !== undefined && connection.tls !== undefined) throw new SourceConfigError('config.ssl', 'give tls or ssl, not both');
  if (ssl !== undefined) connection.tls = ssl;
  if (fromBeginning !== undefined && typeof fromBeginning !== 'boolean') throw new SourceConfigError('config.fromBeginning', 'must be true or false');
  const group = optionalString({ groupId }, 'groupId');
  if (group !== undefined && (group === '' || group.length > 255)) throw new SourceConfigError('config.groupId', 'must be 1 to 255 characters');
  return {
    connection: parseKafkaConfig(connection),
    topics: topicList(topic, topics),
    groupId: group ?? null,
    fromBeginning: fromBeginning === true,
    batchSize: intField({ batchSize }, 'batchSize', 500, 1, 10_000),
  };
}

function topicList(topic: unknown, topics: unknown): string[] {
  if (topic !== undefined && topics !== undefined) throw new SourceConfigError('config.topics', 'give topic or topics, not both');
  let list: unknown[];
  let field: string;
  if (topic !== undefined) {
    if (typeof topic !== 'string') throw new SourceConfigError('config.topic', 'must be a string (a Kafka topic name)');
    [list, field] = [[topic], 'config.topic'];
  } else if (topics !== undefined) {
    if (!Array.isArray(topics) || topics.length === 0 || topics.length > 100) throw new SourceConfigError('config.topics', 'must be an array of 1 to 100 Kafka topic names');
    [list, field] = [topics, 'config.topics'];
  } else throw new SourceConfigError('config.topic', 'is required (or topics)');
  for (const t of list) {
    if (typeof t !== 'string' || !KAFKA_TOPIC.test(t)) throw new SourceConfigError(field, `${JSON.stringify(t)} is not a Kafka topic name (1 to 249 of A-Z a-z 0-9 . _ -)`);
  }
  return [...new Set(list as string[])];
}

/** The secrets of a parsed config, kept out of error messages and logs. */
export function kafkaSecrets(config: KafkaCommandConfig): string[] {
  return config.connection.sasl ? [config.connection.sasl.password] : [];
}
