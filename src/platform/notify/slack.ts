// Owns one attempt of a Slack channel (main thread): a Slack incoming-webhook message (also read
// by Mattermost and Rocket.Chat) POSTed to the configured URL: `text` (the headline and the
// message, readable alone, as notifications show it) and one attachment coloured by severity
// (green when resolved) with the notice's fields.
import { postJson } from './http-post.ts';
import { headline, noticeFields } from './notice.ts';
import type { AttemptContext } from './attempt.ts';
import { TIMEOUT_MS, type AlertNotice, type SlackConfig } from './types.ts';

const COLORS: Record<AlertNotice['severity'], string> = { critical: '#d32f2f', warning: '#f9a825', info: '#1976d2' };
const RESOLVED_COLOR = '#388e3c';
const TEST_COLOR = '#757575';
/** Fields short enough to go two to a row. */
const SHORT = new Set(['Severity', 'Signal', 'Value', 'Threshold', 'Organization', 'Node']);

export interface SlackMessage {
  text: string;
  attachments: Array<{
    color: string;
    title: string;
    text: string;
    fields: Array<{ title: string; value: string; short: boolean }>;
    footer: string;
    ts: number;
  }>;
}

/** Slack's mrkdwn gives &, < and > a meaning: they are escaped in text from a notice. */
function escape(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

export function slackMessage(n: AlertNotice): SlackMessage {
  const color = n.kind === 'resolved' ? RESOLVED_COLOR : n.kind === 'test' ? TEST_COLOR : COLORS[n.severity];
  const time = Date.parse(n.time);
  return {
    text: `*[Spindle] ${escape(headline(n))}*\n${escape(n.message)}`,
    attachments: [{
      color,
      title: escape(n.ruleName),
      text: escape(n.message),
      fields: noticeFields(n).filter(([label]) => label !== 'Rule').map(([label, value]) => ({ title: label, value: escape(value), short: SHORT.has(label) })),
      footer: `Spindle ${escape(n.nodeName)}`,
      ts: Number.isNaN(time) ? Math.floor(Date.now() / 1000) : Math.floor(time / 1000),
    }],
  };
}

export function sendSlack(config: SlackConfig, notice: AlertNotice, ctx: AttemptContext): Promise<number> {
  return postJson({
    url: config.url,
    body: slackMessage(notice),
    headers: {},
    timeoutMs: config.timeoutMs ?? TIMEOUT_MS.default,
    closing: ctx.closing,
    retryAfterCapMs: ctx.retryAfterCapMs,
  });
}
