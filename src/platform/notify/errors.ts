// Owns the errors of the notification channels: ChannelConfigError (a refused channel config, a
// domain error naming the field at fault: `type`, `config.url`, `config.to[1]`; 400
// INVALID_PARAMETER) and AttemptError (one delivery attempt that failed, and whether trying
// again may help).
import { DomainError } from '../../errors/domain-error.ts';

export class ChannelConfigError extends DomainError {
  declare readonly field: string;
  constructor(
    field: string,
    /** The message without the field (for an answer that names the field apart). */
    readonly detail: string,
  ) {
    super('INVALID_PARAMETER', `${field}: ${detail}`, { field });
    this.name = 'ChannelConfigError';
  }
}

/** One failed attempt: `retryable` for network errors, timeouts, HTTP 5xx and 429, SMTP 4xx;
 * `retryAfterMs` when the receiver said when to come back (Retry-After). */
export class AttemptError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
    readonly status?: number,
    readonly retryAfterMs?: number,
  ) {
    super(message);
    this.name = 'AttemptError';
  }
}
