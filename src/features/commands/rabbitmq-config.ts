// Owns the config of a RABBITMQ command: the connection (`url` amqp[s]://user:pass@host:port/vhost,
// or host, port, username, password, vhost; tls for amqps), the queue to consume, an optional
// binding of it to `exchange` with `routingKey`, `declare` (assert the queue, and the exchange of
// `exchangeType`, durable, instead of requiring that they exist), `prefetch` (deliveries
// unacknowledged at most: the bound of what the command holds), heartbeat and connectTimeout.
import { intField, optionalString, portField, requiredString, tlsField, type Raw, type TlsConfig } from '../../sources/config-fields.ts';
import { SourceConfigError } from '../../sources/types.ts';

export const RABBITMQ_FIELDS = ['url', 'host', 'port', 'username', 'password', 'vhost', 'tls', 'queue', 'exchange', 'exchangeType', 'routingKey', 'declare', 'prefetch', 'heartbeat', 'connectTimeout'] as const;

const EXCHANGE_TYPES = ['direct', 'topic', 'fanout', 'headers'] as const;

export interface RabbitMqConfig {
  protocol: 'amqp' | 'amqps';
  hostname: string;
  port: number;
  username: string;
  password: string;
  vhost: string;
  tls: TlsConfig | null;
  queue: string;
  /** The queue is bound to it with `routingKey`; null: consume the queue as it is. */
  exchange: string | null;
  exchangeType: (typeof EXCHANGE_TYPES)[number];
  routingKey: string;
  declare: boolean;
  prefetch: number;
  /** Seconds; 0: off. */
  heartbeat: number;
  connectTimeout: number;
}

export function parseRabbitMqConfig(raw: Raw): RabbitMqConfig {
  const url = optionalString(raw, 'url');
  if (url !== undefined && raw.host !== undefined) throw new SourceConfigError('config.url', 'give url or host/port, not both');
  const server = url !== undefined ? fromUrl(url) : fromFields(raw);
  let tls = tlsField(raw);
  if (server.protocol === 'amqps' && tls === null) tls = { rejectUnauthorized: true };
  const exchange = optionalString(raw, 'exchange') ?? null;
  const exchangeType = optionalString(raw, 'exchangeType') ?? 'topic';
  if (!(EXCHANGE_TYPES as readonly string[]).includes(exchangeType)) throw new SourceConfigError('config.exchangeType', `must be one of ${EXCHANGE_TYPES.join(', ')}`);
  if (raw.declare !== undefined && typeof raw.declare !== 'boolean') throw new SourceConfigError('config.declare', 'must be true or false');
  const queue = requiredString(raw, 'queue');
  if (queue.length > 255) throw new SourceConfigError('config.queue', 'is at most 255 characters');
  return {
    ...server,
    protocol: tls !== null ? 'amqps' : 'amqp',
    tls,
    queue,
    exchange: exchange === '' ? null : exchange,
    exchangeType: exchangeType as RabbitMqConfig['exchangeType'],
    routingKey: optionalString(raw, 'routingKey') ?? (exchangeType === 'topic' ? '#' : ''),
    declare: raw.declare === true,
    prefetch: intField(raw, 'prefetch', 100, 1, 10_000),
    heartbeat: intField(raw, 'heartbeat', 30, 0, 3600),
    connectTimeout: intField(raw, 'connectTimeout', 5000, 100, 600_000),
  };
}

type Server = Pick<RabbitMqConfig, 'protocol' | 'hostname' | 'port' | 'username' | 'password' | 'vhost'>;

function fromUrl(text: string): Server {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new SourceConfigError('config.url', 'must look like amqp://user:password@host:5672/vhost');
  }
  if (url.protocol !== 'amqp:' && url.protocol !== 'amqps:') throw new SourceConfigError('config.url', 'must start with amqp:// or amqps://');
  if (url.hostname === '') throw new SourceConfigError('config.url', 'names no host');
  const protocol = url.protocol === 'amqps:' ? 'amqps' : 'amqp';
  const path = url.pathname.replace(/^\//, '');
  return {
    protocol,
    hostname: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: url.port ? Number(url.port) : protocol === 'amqps' ? 5671 : 5672,
    username: url.username ? decodeURIComponent(url.username) : 'guest',
    password: url.password ? decodeURIComponent(url.password) : 'guest',
    // amqp://host/ and amqp://host are the default vhost "/" (the AMQP URI spec: "/%2f" names it).
    vhost: path === '' ? '/' : decodeURIComponent(path),
  };
}

function fromFields(raw: Raw): Server {
  return {
    protocol: 'amqp',
    hostname: requiredString(raw, 'host'),
    port: portField(raw, 'port', 5672),
    username: optionalString(raw, 'username') ?? 'guest',
    password: optionalString(raw, 'password') ?? 'guest',
    vhost: optionalString(raw, 'vhost') ?? '/',
  };
}

/** The secrets of a parsed config, kept out of error messages and logs. */
export function rabbitMqSecrets(config: RabbitMqConfig): string[] {
  return [config.password];
}
