// ViewerBudget: what one console viewer may be sent, as two token buckets (messages and bytes a
// second, each with a burst of one second's worth). A message the budget has no room for is
// dropped by the caller and counted; nothing waits. Pure: the clock is an argument.
export interface ViewerRate {
  /** Messages a second. */
  messages: number;
  /** Bytes a second (as shown: the topic and the truncated payload). */
  bytes: number;
}

export class ViewerBudget {
  private messages: number;
  private bytes: number;
  private at: number;

  constructor(readonly rate: ViewerRate, now = Date.now()) {
    this.messages = rate.messages;
    this.bytes = rate.bytes;
    this.at = now;
  }

  /** Takes one message of `bytes` from the budget: false (nothing taken) when there is no room. */
  take(bytes: number, now = Date.now()): boolean {
    const elapsed = Math.max(0, now - this.at) / 1000;
    this.at = Math.max(this.at, now);
    if (elapsed > 0) {
      this.messages = Math.min(this.rate.messages, this.messages + elapsed * this.rate.messages);
      this.bytes = Math.min(this.rate.bytes, this.bytes + elapsed * this.rate.bytes);
    }
    if (this.messages < 1 || bytes > this.bytes) return false;
    this.messages -= 1;
    this.bytes -= bytes;
    return true;
  }
}

/** What the page shows of a payload: at most `max` bytes, as text when they are UTF-8, otherwise
 * base64; `truncated` when the payload was longer. */
export function shownPayload(payload: Uint8Array, max: number): { payload: string; encoding: 'text' | 'base64'; truncated: boolean } {
  const truncated = payload.length > max;
  const bytes = truncated ? payload.subarray(0, max) : payload;
  try {
    // stream: a multi-byte character cut by the truncation is left out, not an error.
    const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes, { stream: truncated });
    return { payload: text, encoding: 'text', truncated };
  } catch {
    return { payload: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64'), encoding: 'base64', truncated };
  }
}
