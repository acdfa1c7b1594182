// Owns the public surface of the notification channels (main thread): what the admin routes and
// the alert engine use.
export { CHANNEL_TYPES, RETRIES, TIMEOUT_MS, type AlertNotice, type ChannelSpec, type ChannelType, type DeliveryResult, type EmailConfig, type SlackConfig, type WebhookConfig } from './types.ts';
export { ChannelConfigError } from './errors.ts';
export { normalizeChannel } from './normalize.ts';
export { REDACTED, redactChannel, mergeSecrets } from './secrets.ts';
export { testNotice } from './notice.ts';
export { Notifier, DEFAULT_MAX_IN_FLIGHT, type NotifierOptions } from './notifier.ts';
export { slackMessage } from './slack.ts';
export { emailMessage } from './email.ts';
