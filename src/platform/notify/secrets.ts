// Owns the secrets of a channel config (main thread): redactChannel hides them for answers
// (the email password, and the values of webhook headers whose name looks like a credential),
// mergeSecrets puts them back when an update sends the placeholder meaning "unchanged". A secret
// is kept only while it goes to the same place (the same SMTP host, port and user; the same URL
// origin): an update that points a channel elsewhere must give the secret again, or the old one
// would be sent to a server the operator who stored it never chose.
import { ChannelConfigError } from './errors.ts';
import type { ChannelSpec, EmailConfig, WebhookConfig } from './types.ts';

export const REDACTED = '******';

/** Header names whose value is a credential: authorization, proxy-authorization, x-api-key,
 * x-auth-token, x-webhook-secret, cookie, ... */
const SECRET_HEADER = /auth|token|secret|key|password|passwd|cookie|signature|credential/i;

export function isSecretHeader(name: string): boolean {
  return SECRET_HEADER.test(name);
}

/** A copy of `spec` with its secrets replaced by REDACTED (the spec is not changed). */
export function redactChannel(spec: ChannelSpec): ChannelSpec {
  switch (spec.type) {
    case 'email': {
      const c = spec.config as EmailConfig;
      return { type: 'email', config: { ...c, to: [...c.to], ...(c.password !== undefined ? { password: REDACTED } : {}) } };
    }
    case 'webhook': {
      const c = spec.config as WebhookConfig;
      if (!c.headers) return { type: 'webhook', config: { ...c } };
      const headers = Object.fromEntries(Object.entries(c.headers).map(([name, value]) => [name, isSecretHeader(name) ? REDACTED : value]));
      return { type: 'webhook', config: { ...c, headers } };
    }
    case 'slack':
      return { type: 'slack', config: { ...spec.config } };
  }
}

/** `next` (normalized) with each REDACTED value replaced by the secret `old` holds in its place.
 * Throws a ChannelConfigError naming the field when there is none to keep: the type changed, the
 * field was not set, or the channel now goes elsewhere. */
export function mergeSecrets(old: ChannelSpec | null, next: ChannelSpec): ChannelSpec {
  switch (next.type) {
    case 'email': {
      const c = next.config as EmailConfig;
      if (c.password !== REDACTED) return next;
      const o = old?.type === 'email' ? (old.config as EmailConfig) : null;
      if (o === null || o.password === undefined) throw new ChannelConfigError('config.password', `is "${REDACTED}" (unchanged) but the channel has no password to keep: give it`);
      if (o.host !== c.host || o.port !== c.port || o.username !== c.username) {
        throw new ChannelConfigError('config.password', 'must be given again when host, port or username change');
      }
      return { type: 'email', config: { ...c, password: o.password } };
    }
    case 'webhook': {
      const c = next.config as WebhookConfig;
      const redacted = Object.entries(c.headers ?? {}).filter(([, value]) => value === REDACTED);
      if (redacted.length === 0) return next;
      const o = old?.type === 'webhook' ? (old.config as WebhookConfig) : null;
      const headers = { ...c.headers };
      for (const [name] of redacted) {
        const at = `config.headers.${name}`;
        const kept = o ? Object.entries(o.headers ?? {}).find(([n]) => n.toLowerCase() === name.toLowerCase()) : undefined;
        if (!o || kept === undefined) throw new ChannelConfigError(at, `is "${REDACTED}" (unchanged) but the channel has no such header to keep: give its value`);
        if (new URL(o.url).origin !== new URL(c.url).origin) throw new ChannelConfigError(at, 'must be given again when the URL goes to another origin');
        headers[name] = kept[1];
      }
      return { type: 'webhook', config: { ...c, headers } };
    }
    case 'slack':
      return next;
  }
}
