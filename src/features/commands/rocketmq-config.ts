// Owns the config of a ROCKETMQ command: the proxy's gRPC `endpoints` ("host:port", several joined
// by ";"), `namespace`, tls, the credentials (accessKey/secretKey), the `consumerGroup` and `topic`
// (both must exist on the broker: the 5.x gRPC clients cannot create them), the `tag` filter
// expression ("*", "a || b"), and the receive loop: `batchSize` (messages per receive at most),
// `awaitDuration` (long polling), `invisibleDuration` (how long a received message stays hidden
// before RocketMQ delivers it again unless acknowledged), `requestTimeout`, `startupTimeout`.
import { intField, optionalString, requiredString, type Raw } from '../../sources/config-fields.ts';
import { SourceConfigError } from '../../sources/types.ts';

export const ROCKETMQ_FIELDS = ['endpoints', 'namespace', 'tls', 'accessKey', 'secretKey', 'consumerGroup', 'topic', 'tag', 'batchSize', 'awaitDuration', 'invisibleDuration', 'requestTimeout', 'startupTimeout'] as const;

/** host:port, host names of letters, digits, '.', '-', '_' or an IPv4/bracketed IPv6 address. */
const ENDPOINT = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(:\d{1,5})?$/;
/** RocketMQ's own rule for topic and group names (TopicValidator / the proxy's checks). */
const RESOURCE = /^[%|A-Za-z0-9_-]{1,127}$/;

export interface RocketMqConfig {
  endpoints: string;
  namespace: string;
  tls: boolean;
  /** null: no credentials (ACL off). */
  credentials: { accessKey: string; secretKey: string } | null;
  consumerGroup: string;
  topic: string;
  tag: string;
  batchSize: number;
  /** Milliseconds. */
  awaitDuration: number;
  invisibleDuration: number;
  requestTimeout: number;
  startupTimeout: number;
}

export function parseRocketMqConfig(raw: Raw): RocketMqConfig {
  const endpoints = requiredString(raw, 'endpoints');
  const list = endpoints.split(';').map((e) => e.trim());
  for (const e of list) {
    if (!ENDPOINT.test(e) || Number(e.split(':').pop()) > 65535) throw new SourceConfigError('config.endpoints', `${JSON.stringify(e)} is not host:port (the proxy's gRPC address, e.g. "127.0.0.1:8081"; several joined by ";")`);
  }
  if (raw.tls !== undefined && typeof raw.tls !== 'boolean') throw new SourceConfigError('config.tls', 'must be true or false');
  const accessKey = optionalString(raw, 'accessKey');
  const secretKey = optionalString(raw, 'secretKey');
  if ((accessKey === undefined) !== (secretKey === undefined)) throw new SourceConfigError(accessKey === undefined ? 'config.accessKey' : 'config.secretKey', 'give accessKey and secretKey together');
  const invisibleDuration = intField(raw, 'invisibleDuration', 60_000, 10_000, 43_200_000);
  // The proxy polls at least 5 s and at most 20 s (grpcClientConsumerMin/MaxLongPollingTimeoutMillis)
  // and refuses a receive whose deadline leaves less than that.
  const awaitDuration = intField(raw, 'awaitDuration', 10_000, 5000, 20_000);
  return {
    endpoints: list.join(';'),
    namespace: optionalString(raw, 'namespace') ?? '',
    tls: raw.tls === true,
    credentials: accessKey !== undefined && secretKey !== undefined ? { accessKey, secretKey } : null,
    consumerGroup: resource(raw, 'consumerGroup'),
    topic: resource(raw, 'topic'),
    tag: tagExpression(raw),
    batchSize: intField(raw, 'batchSize', 32, 1, 32),
    awaitDuration,
    invisibleDuration,
    requestTimeout: intField(raw, 'requestTimeout', 3000, 1000, 60_000),
    startupTimeout: intField(raw, 'startupTimeout', 30_000, 1000, 600_000),
  };
}

function resource(raw: Raw, key: string): string {
  const v = requiredString(raw, key);
  if (!RESOURCE.test(v)) throw new SourceConfigError(`config.${key}`, 'must be 1 to 127 of A-Z a-z 0-9 _ - % |');
  return v;
}

function tagExpression(raw: Raw): string {
  const v = optionalString(raw, 'tag') ?? '*';
  if (v.trim() === '' || v.length > 1024) throw new SourceConfigError('config.tag', 'must be a tag filter expression ("*", "a", "a || b"), at most 1024 characters');
  return v.trim();
}

/** The secrets of a parsed config, kept out of error messages and logs. */
export function rocketMqSecrets(config: RocketMqConfig): string[] {
  return config.credentials ? [config.credentials.secretKey] : [];
}
