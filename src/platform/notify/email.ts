// Owns one attempt of an email channel (main thread): the notice as a message (subject
// "[Spindle] FIRING critical: <rule>", a text body and a simple HTML one) sent through the
// server's pooled nodemailer transport, bounded by the channel's timeout and by the notifier
// closing. SMTP 4xx replies (and 503), connection failures and timeouts may pass on a retry;
// 5xx replies, authentication and TLS failures will not.
import type { Transporter } from 'nodemailer';

import { AttemptError } from './errors.ts';
import { headline, noticeFields, oneLine } from './notice.ts';
import type { AttemptContext } from './attempt.ts';
import type { SmtpTransports } from './smtp-transports.ts';
import { TIMEOUT_MS, type AlertNotice, type EmailConfig } from './types.ts';

/** Failures of the connection, not of what was sent: another attempt may get through. */
const TRANSIENT_CODES = new Set(['ECONNECTION', 'ETIMEDOUT', 'ESOCKET', 'EDNS', 'ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH']);

export interface EmailMessage { subject: string; text: string; html: string }

export function emailMessage(n: AlertNotice): EmailMessage {
  const fields = noticeFields(n);
  const width = Math.max(...fields.map(([label]) => label.length));
  const text = [n.message, '', ...fields.map(([label, value]) => `${`${label}:`.padEnd(width + 2)}${value}`), '', '-- Spindle'].join('\n');
  const rows = fields.map(([label, value]) => `<tr><th align="left" style="padding:2px 12px 2px 0">${html(label)}</th><td>${html(value)}</td></tr>`).join('');
  const body = `<!doctype html><html><body style="font-family:sans-serif">`
    + `<h2 style="margin:0 0 8px">${html(headline(n))}</h2><p>${html(n.message)}</p>`
    + `<table style="border-collapse:collapse">${rows}</table><p style="color:#777">Spindle</p></body></html>`;
  return { subject: `[Spindle] ${headline(n)}`, text, html: body };
}

function html(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** Answers the server's reply code (250) when it accepted the message. */
export async function sendEmail(config: EmailConfig, notice: AlertNotice, ctx: AttemptContext, transports: SmtpTransports): Promise<number | undefined> {
  const message = emailMessage(notice);
  const timeoutMs = config.timeoutMs ?? TIMEOUT_MS.default;
  const timeout = AbortSignal.timeout(timeoutMs);
  try {
    const info = await transports.with(config, (transport: Transporter) =>
      transport.sendMail({
        from: config.from,
        to: config.to,
        subject: oneLine(message.subject, 250),
        text: message.text,
        html: message.html,
        signal: AbortSignal.any([timeout, ctx.closing]),
      }),
    );
    const code = /^(\d{3})/.exec(String((info as { response?: unknown }).response ?? ''));
    return code ? Number(code[1]) : undefined;
  } catch (err) {
    if (ctx.closing.aborted) throw new AttemptError('abandoned: the notifier closed', false);
    if (timeout.aborted) throw new AttemptError(`timed out after ${timeoutMs} ms`, true);
    throw smtpError(err);
  }
}

function smtpError(err: unknown): AttemptError {
  const e = err as Error & { code?: string; responseCode?: number; permanent?: boolean; response?: string };
  const message = oneLine(e?.message ?? String(err), 300);
  if (typeof e?.responseCode === 'number') {
    // RFC 5321 4.2.1: 4yz is transient, 5yz permanent; nodemailer marks 503 (bad sequence) transient too.
    const permanent = e.permanent ?? (e.responseCode >= 500 && e.responseCode !== 503);
    return new AttemptError(`SMTP ${e.responseCode}: ${message}`, !permanent, e.responseCode);
  }
  const retryable = e?.code !== undefined && TRANSIENT_CODES.has(e.code);
  return new AttemptError(e?.code ? `${e.code}: ${message}` : message, retryable);
}
