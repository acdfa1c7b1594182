// Owns the config of a PULSAR command: `serviceUrl` (the broker's web service, http(s)://host:port,
// or ws(s)://: the WebSocket API and the admin REST API are served there), `topic`
// (persistent://tenant/namespace/topic, non-persistent://..., or a short name in public/default),
// `subscription` and `subscriptionType`, `receiverQueueSize` (messages unacknowledged at most: the
// bound of what the command holds), `token` (authentication, sent as a bearer token), and
// connectTimeout.
import { intField, optionalString, requiredString, type Raw } from '../../sources/config-fields.ts';
import { SourceConfigError } from '../../sources/types.ts';

export const PULSAR_FIELDS = ['serviceUrl', 'topic', 'subscription', 'subscriptionType', 'receiverQueueSize', 'token', 'connectTimeout'] as const;

export const SUBSCRIPTION_TYPES = ['Exclusive', 'Shared', 'Failover', 'Key_Shared'] as const;

/** Pulsar's names: no '/' in a part, and none of the characters its REST paths cannot carry. */
const NAME = /^[A-Za-z0-9._:=-]{1,255}$/;

export interface PulsarConfig {
  /** ws:// or wss:// base, no trailing slash. */
  wsBase: string;
  /** http:// or https:// base, no trailing slash (the admin REST API: the lag). */
  httpBase: string;
  /** persistent or non-persistent. */
  domain: 'persistent' | 'non-persistent';
  tenant: string;
  namespace: string;
  topic: string;
  subscription: string;
  subscriptionType: (typeof SUBSCRIPTION_TYPES)[number];
  receiverQueueSize: number;
  token: string | null;
  connectTimeout: number;
}

export function parsePulsarConfig(raw: Raw): PulsarConfig {
  const { wsBase, httpBase } = serviceUrl(requiredString(raw, 'serviceUrl'));
  const type = optionalString(raw, 'subscriptionType') ?? 'Exclusive';
  if (!(SUBSCRIPTION_TYPES as readonly string[]).includes(type)) throw new SourceConfigError('config.subscriptionType', `must be one of ${SUBSCRIPTION_TYPES.join(', ')}`);
  const subscription = requiredString(raw, 'subscription');
  if (!NAME.test(subscription)) throw new SourceConfigError('config.subscription', 'must be 1 to 255 of A-Z a-z 0-9 . _ : = -');
  const token = optionalString(raw, 'token');
  if (token === '') throw new SourceConfigError('config.token', 'must not be empty (leave it out for no authentication)');
  return {
    wsBase,
    httpBase,
    ...topicName(requiredString(raw, 'topic')),
    subscription,
    subscriptionType: type as PulsarConfig['subscriptionType'],
    receiverQueueSize: intField(raw, 'receiverQueueSize', 100, 1, 10_000),
    token: token ?? null,
    connectTimeout: intField(raw, 'connectTimeout', 5000, 100, 600_000),
  };
}

function serviceUrl(text: string): { wsBase: string; httpBase: string } {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new SourceConfigError('config.serviceUrl', 'must look like http://host:8080 (the broker web service)');
  }
  const secure = url.protocol === 'https:' || url.protocol === 'wss:';
  if (!['http:', 'https:', 'ws:', 'wss:'].includes(url.protocol)) throw new SourceConfigError('config.serviceUrl', 'must start with http://, https://, ws:// or wss://');
  if (url.hostname === '') throw new SourceConfigError('config.serviceUrl', 'names no host');
  if (url.username !== '' || url.password !== '') throw new SourceConfigError('config.serviceUrl', 'must not hold credentials (give token)');
  const path = url.pathname.replace(/\/+$/, '');
  return { wsBase: `${secure ? 'wss' : 'ws'}://${url.host}${path}`, httpBase: `${secure ? 'https' : 'http'}://${url.host}${path}` };
}

function topicName(text: string): Pick<PulsarConfig, 'domain' | 'tenant' | 'namespace' | 'topic'> {
  const m = /^(persistent|non-persistent):\/\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(text);
  const [domain, tenant, namespace, topic] = m ? [m[1], m[2], m[3], m[4]] : ['persistent', 'public', 'default', text];
  for (const part of [tenant, namespace, topic]) {
    if (!NAME.test(part)) throw new SourceConfigError('config.topic', 'must be persistent://tenant/namespace/topic, non-persistent://..., or a short topic name (in public/default) of A-Z a-z 0-9 . _ : = -');
  }
  return { domain: domain as PulsarConfig['domain'], tenant, namespace, topic };
}

/** The secrets of a parsed config, kept out of error messages and logs. */
export function pulsarSecrets(config: PulsarConfig): string[] {
  return config.token ? [config.token] : [];
}
