// Log topics in one worker thread: messages whose topic matches a log topic's filter are written
// to the log at that log topic's level, with the publisher, QoS, retain, size and a payload
// preview. Like rules, a log topic's filter is an entry of the routing core under its own handle
// (TAP_WORKER), so messages no log topic matches cost nothing; the publishing thread writes the
// line. The main thread (manager.ts) installs and removes them on every worker.
import type { Message } from '../../broker/message.ts';
import type { Logger } from '../../log/index.ts';
import type { LogLevel } from '../../log/levels.ts';

export interface LogTopicSpec {
  id: string;
  handle: number;
  topic: string;
  level: LogLevel;
}

/** Bytes of the payload shown in a log line (as UTF-8 text when it is, else base64). */
export const PREVIEW_BYTES = 256;

export class WorkerLogTopics {
  private readonly byHandle = new Map<number, LogTopicSpec>();
  private readonly byId = new Map<string, LogTopicSpec>();

  constructor(
    private readonly log: Logger,
    private readonly publisherOf: (handle: number) => string | undefined,
  ) {}

  has(handle: number): boolean {
    return this.byHandle.has(handle);
  }

  install(specs: readonly LogTopicSpec[], only = false): void {
    if (only) for (const id of [...this.byId.keys()]) if (!specs.some((s) => s.id === id)) this.remove(id);
    for (const s of specs) {
      this.remove(s.id);
      this.byHandle.set(s.handle, s);
      this.byId.set(s.id, s);
    }
  }

  remove(id: string): boolean {
    const s = this.byId.get(id);
    if (!s) return false;
    this.byId.delete(id);
    this.byHandle.delete(s.handle);
    return true;
  }

  /** RouterHost.tapMatched for a log topic's handle. */
  matched(handle: number, m: Message, publisher: number): void {
    const s = this.byHandle.get(handle);
    if (s === undefined || !this.log.isLevelEnabled(s.level)) return;
    const shown = m.payload.subarray(0, PREVIEW_BYTES);
    const text = shown.toString('utf8');
    const isText = Buffer.byteLength(text) === shown.length && !text.includes('\uFFFD');
    this.log[s.level]('message on a log topic', {
      logTopic: s.topic,
      topic: m.topic,
      clientId: this.publisherOf(publisher) ?? null,
      qos: m.qos,
      retain: m.retain,
      size: m.payload.length,
      payload: isText ? text : shown.toString('base64'),
      ...(isText ? {} : { payloadEncoding: 'base64' }),
      ...(m.payload.length > PREVIEW_BYTES ? { truncated: true } : {}),
    });
  }
}
