// Owns the notification channels' data types (main thread): the channel types and their configs,
// what is notified (an AlertNotice, plain data) and what a delivery answers (DeliveryResult).
// The normalized form of a config (normalizeChannel) has every optional limit filled in.

export const CHANNEL_TYPES = ['webhook', 'slack', 'email'] as const;
export type ChannelType = (typeof CHANNEL_TYPES)[number];

/** A JSON POST of the notice to `url`, with `headers` added. */
export interface WebhookConfig { url: string; headers?: Record<string, string>; timeoutMs?: number; retries?: number }
/** A Slack incoming webhook (or compatible: Mattermost, Rocket.Chat): POST {text, attachments}. */
export interface SlackConfig { url: string; timeoutMs?: number; retries?: number }
/** An SMTP server (nodemailer); `secure`: TLS from the start (465), else STARTTLS when offered. */
export interface EmailConfig {
  host: string;
  port: number;
  secure: boolean;
  username?: string;
  password?: string;
  from: string;
  to: string[];
  timeoutMs?: number;
  retries?: number;
  rejectUnauthorized?: boolean;
}

export interface ChannelSpec { type: ChannelType; config: WebhookConfig | SlackConfig | EmailConfig }

/** What is notified (plain data). */
export interface AlertNotice {
  kind: 'firing' | 'resolved' | 'test';
  alertId: string | null;
  ruleId: string | null;
  ruleName: string;
  severity: 'info' | 'warning' | 'critical';
  organizationId: string | null;
  signal: string;
  value: number | null;
  threshold: number | null;
  /** One human line, e.g. "connections 120 > 100 over 60 s". */
  message: string;
  /** ISO time the alert first fired. */
  firstTime: string;
  /** ISO time of this notice. */
  time: string;
  nodeName: string;
}

/** How a delivery ended: `attempts` made (0: dropped or refused before any), the last `error`,
 * the last HTTP status (or SMTP reply code) when there was one, and `ms` spent in all. */
export interface DeliveryResult { ok: boolean; attempts: number; error?: string; status?: number; ms: number }

/** Defaults and bounds of the fields every channel type has. */
export const RETRIES = { default: 3, min: 0, max: 10 } as const;
export const TIMEOUT_MS = { default: 5000, min: 100, max: 60_000 } as const;
