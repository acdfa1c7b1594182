// Owns one HTTP attempt of the webhook and Slack channels (main thread): a JSON POST with Node's
// fetch, bounded by the channel's timeout (AbortSignal.timeout) and by the notifier closing, and
// the answer classified: 2xx is done; 5xx, 429, timeouts and network errors may pass on a retry
// (AttemptError.retryable, with Retry-After when given); any other status will not. Redirects are
// not followed (fetch would turn the POST into a GET): a 3xx is a failure naming the Location.
import { AttemptError } from './errors.ts';

/** What of a refusal's body goes into the error (the receiver's reason, not its whole page). */
const BODY_EXCERPT = 300;

export interface PostOptions {
  url: string;
  body: unknown;
  headers: Record<string, string>;
  timeoutMs: number;
  /** Aborted when the notifier closes. */
  closing: AbortSignal;
  /** Retry-After is believed up to this long. */
  retryAfterCapMs: number;
}

/** Answers the status of a 2xx; throws an AttemptError otherwise. */
export async function postJson(o: PostOptions): Promise<number> {
  let res: Response;
  try {
    res = await fetch(o.url, {
      method: 'POST',
      headers: { 'user-agent': 'spindle', ...o.headers, 'content-type': 'application/json' },
      body: JSON.stringify(o.body),
      redirect: 'manual',
      signal: AbortSignal.any([AbortSignal.timeout(o.timeoutMs), o.closing]),
    });
  } catch (err) {
    throw requestError(err, o);
  }
  if (res.status >= 200 && res.status < 300) {
    await res.body?.cancel().catch(() => undefined);
    return res.status;
  }
  // The body is only the error's detail: a body that fails to arrive leaves the status alone.
  const excerpt = await readExcerpt(res).catch(() => '');
  const detail = excerpt ? `: ${excerpt}` : '';
  if (res.status >= 300 && res.status < 400) {
    throw new AttemptError(`HTTP ${res.status}: redirected to ${res.headers.get('location') ?? '(no location)'}, not followed`, false, res.status);
  }
  const retryable = res.status >= 500 || res.status === 429;
  const retryAfterMs = retryable ? retryAfter(res.headers.get('retry-after'), o.retryAfterCapMs) : undefined;
  throw new AttemptError(`HTTP ${res.status}${detail}`, retryable, res.status, retryAfterMs);
}

function requestError(err: unknown, o: PostOptions): AttemptError {
  if (o.closing.aborted) return new AttemptError('abandoned: the notifier closed', false);
  const e = err as Error & { cause?: Error & { code?: string } };
  if (e?.name === 'TimeoutError') return new AttemptError(`timed out after ${o.timeoutMs} ms`, true);
  // fetch reports network errors as TypeError('fetch failed') with the socket error as cause.
  const cause = e?.cause;
  if (cause) return new AttemptError(`${cause.code ? `${cause.code}: ` : ''}${cause.message}`, true);
  return new AttemptError(e instanceof Error ? e.message : String(err), true);
}

/** The start of a refusal's body, read only that far. */
async function readExcerpt(res: Response): Promise<string> {
  if (!res.body) return '';
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < BODY_EXCERPT) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      size += value.length;
    }
  } finally {
    await reader.cancel().catch(() => undefined);
  }
  const text = Buffer.concat(chunks).toString('utf8', 0, Math.min(size, BODY_EXCERPT));
  return text.replace(/\s+/g, ' ').trim();
}

/** Retry-After as seconds or an HTTP date (RFC 9110 10.2.3), capped; undefined when absent or unreadable. */
export function retryAfter(value: string | null, capMs: number): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  let ms: number;
  if (/^\d+$/.test(trimmed)) ms = Number(trimmed) * 1000;
  else {
    const at = Date.parse(trimmed);
    if (Number.isNaN(at)) return undefined;
    ms = at - Date.now();
  }
  return Math.min(Math.max(0, ms), capMs);
}
