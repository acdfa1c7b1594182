// Owns turning a channel as a request gives it (type and config, unknown input) into a
// ChannelSpec with every default filled in (main thread), or a ChannelConfigError naming the field
// at fault. What it answers is trusted by the senders: they check nothing again.
import { addressProblem } from './address.ts';
import { boolField, deliveryFields, field, httpUrl, intField, onlyFields, optionalString, requiredString, typeName, type Raw } from './config-fields.ts';
import { ChannelConfigError } from './errors.ts';
import { headersField } from './headers.ts';
import { CHANNEL_TYPES, type ChannelSpec, type ChannelType, type EmailConfig, type SlackConfig, type WebhookConfig } from './types.ts';

const WEBHOOK_FIELDS = ['url', 'headers', 'timeoutMs', 'retries'] as const;
const SLACK_FIELDS = ['url', 'timeoutMs', 'retries'] as const;
const EMAIL_FIELDS = ['host', 'port', 'secure', 'username', 'password', 'from', 'to', 'timeoutMs', 'retries', 'rejectUnauthorized'] as const;
const MAX_RECIPIENTS = 50;

export function normalizeChannel(type: unknown, config: unknown): ChannelSpec {
  if (typeof type !== 'string' || !(CHANNEL_TYPES as readonly string[]).includes(type)) {
    throw new ChannelConfigError('type', `must be one of ${CHANNEL_TYPES.join(', ')}${type === undefined ? '' : ` (got ${JSON.stringify(type)})`}`);
  }
  if (config === undefined || config === null || typeof config !== 'object' || Array.isArray(config)) {
    throw new ChannelConfigError('config', `expected an object, got ${config === undefined ? 'nothing' : typeName(config)}`);
  }
  const raw = config as Raw;
  switch (type as ChannelType) {
    case 'webhook':
      return { type: 'webhook', config: webhookConfig(raw) };
    case 'slack':
      return { type: 'slack', config: slackConfig(raw) };
    case 'email':
      return { type: 'email', config: emailConfig(raw) };
  }
}

function webhookConfig(raw: Raw): Required<WebhookConfig> {
  onlyFields(raw, WEBHOOK_FIELDS);
  return { url: httpUrl(raw, 'url'), headers: headersField(raw), ...deliveryFields(raw) };
}

function slackConfig(raw: Raw): Required<SlackConfig> {
  onlyFields(raw, SLACK_FIELDS);
  return { url: httpUrl(raw, 'url'), ...deliveryFields(raw) };
}

function emailConfig(raw: Raw): EmailConfig & Required<Pick<EmailConfig, 'timeoutMs' | 'retries' | 'rejectUnauthorized'>> {
  onlyFields(raw, EMAIL_FIELDS);
  const host = requiredString(raw, 'host', 253);
  if (/[\s/@]/.test(host)) throw new ChannelConfigError(field('host'), 'must be a host name or an IP address');
  const secure = boolField(raw, 'secure', false);
  // Implicit TLS is submissions (465); plain connections upgrade with STARTTLS on submission (587).
  const port = intField(raw, 'port', { default: secure ? 465 : 587, min: 1, max: 65535 });
  const username = optionalString(raw, 'username', 256);
  const password = optionalString(raw, 'password', 1024);
  if (password !== undefined && (username === undefined || username === '')) throw new ChannelConfigError(field('username'), 'is required when a password is given');
  const from = requiredString(raw, 'from', 320);
  const fromProblem = addressProblem(from);
  if (fromProblem) throw new ChannelConfigError(field('from'), fromProblem);
  const to = recipients(raw.to);
  const out: ReturnType<typeof emailConfig> = {
    host,
    port,
    secure,
    from,
    to,
    ...deliveryFields(raw),
    rejectUnauthorized: boolField(raw, 'rejectUnauthorized', true),
  };
  if (username !== undefined && username !== '') out.username = username;
  if (password !== undefined) out.password = password;
  return out;
}

function recipients(v: unknown): string[] {
  if (v === undefined || v === null) throw new ChannelConfigError(field('to'), 'is required (a list of email addresses)');
  if (!Array.isArray(v)) throw new ChannelConfigError(field('to'), `expected a list of email addresses, got ${typeName(v)}`);
  if (v.length === 0) throw new ChannelConfigError(field('to'), 'must name at least one address');
  if (v.length > MAX_RECIPIENTS) throw new ChannelConfigError(field('to'), `names more than ${MAX_RECIPIENTS} addresses`);
  return v.map((item, i) => {
    const at = field(`to[${i}]`);
    if (typeof item !== 'string') throw new ChannelConfigError(at, `expected an email address, got ${typeName(item)}`);
    if (/[\0\r\n]/.test(item)) throw new ChannelConfigError(at, 'must not contain line breaks or NUL');
    const problem = addressProblem(item);
    if (problem) throw new ChannelConfigError(at, problem);
    return item;
  });
}
