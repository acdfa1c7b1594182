// The PULSAR command type (main thread): a consumer on Pulsar's WebSocket API (the `ws` package;
// the broker's /ws/v2/consumer endpoint, in pull mode) that publishes each message into the
// broker. At least once: messages are acknowledged (each, by messageId) only after publishBatch
// resolved; what is unacknowledged when the connection ends is redelivered by Pulsar to the
// subscription. The command permits `receiverQueueSize` messages and permits more only as it
// acknowledges: the bound of what it holds, and the backpressure. A 400 or 404 answer to the
// WebSocket handshake (a bad topic, a namespace that does not exist) fails the command; anything
// else (the broker down, 401/403, the connection lost) is reconnected. Lag: the subscription's
// msgBacklog from the admin REST API (topic stats).
import WebSocket from 'ws';

import { networkKindIn, safeMessage } from '../../sources/driver-error.ts';
import { FailureSignal } from './failure-signal.ts';
import { pulsarSecrets, type PulsarConfig } from './pulsar-config.ts';
import { headerText } from './record-headers.ts';
import { ConsumerError, type Consumer, type ConsumerContext, type InboundRecord } from './types.ts';

/** Handshake answers after which connecting again cannot help. */
const FATAL_STATUS = new Set([400, 404]);

/** A message frame of the WebSocket consumer. */
interface PulsarFrame {
  messageId: string;
  payload: string;
  properties?: Record<string, string>;
  publishTime?: string;
  eventTime?: string;
  redeliveryCount?: number;
  key?: string;
}

export class PulsarCommandConsumer implements Consumer {
  private readonly failure = new FailureSignal();
  private socket: WebSocket | null = null;
  private readonly pending: PulsarFrame[] = [];
  private flushing = false;
  private closing = false;

  constructor(
    private readonly config: PulsarConfig,
    private readonly ctx: ConsumerContext,
  ) {}

  get failed(): Promise<never> {
    return this.failure.promise;
  }

  async open(): Promise<void> {
    const c = this.config;
    const query = new URLSearchParams({ subscriptionType: c.subscriptionType, receiverQueueSize: String(c.receiverQueueSize), pullMode: 'true' });
    const url = `${c.wsBase}/ws/v2/consumer/${this.topicPath()}/${encodeURIComponent(c.subscription)}?${query}`;
    const socket = new WebSocket(url, { headers: this.headers(), handshakeTimeout: c.connectTimeout });
    this.socket = socket;
    await new Promise<void>((resolve, reject) => {
      socket.once('open', () => resolve());
      socket.once('error', (err) => reject(this.error(err)));
      socket.once('unexpected-response', (_req, res) => {
        const status = res.statusCode ?? 0;
        res.resume();
        socket.terminate();
        reject(new ConsumerError(`pulsar: the WebSocket handshake was answered ${status} ${res.statusMessage ?? ''}`.trim() + hint(status), !FATAL_STATUS.has(status)));
      });
    });
    socket.on('error', (err) => this.lost('connection error', err));
    socket.on('close', (code, reason) => this.lost(`connection closed (${code}${reason.length > 0 ? ` ${reason.toString().slice(0, 200)}` : ''})`));
    socket.on('message', (data) => this.received(data.toString()));
    this.permit(c.receiverQueueSize);
  }

  async close(): Promise<void> {
    this.closing = true;
    const socket = this.socket;
    if (!socket || socket.readyState === WebSocket.CLOSED) return;
    // Closing the consumer: what it has not acknowledged is redelivered to the subscription.
    await new Promise<void>((resolve) => {
      socket.once('close', () => resolve());
      socket.close();
      setTimeout(() => {
        socket.terminate();
        resolve();
      }, 2000).unref();
    });
  }

  async lag(): Promise<number | null> {
    const c = this.config;
    const res = await fetch(`${c.httpBase}/admin/v2/${this.topicPath()}/stats`, { headers: this.headers(), signal: AbortSignal.timeout(c.connectTimeout) });
    if (!res.ok) throw new Error(`pulsar topic stats answered ${res.status}`);
    const stats = (await res.json()) as { subscriptions?: Record<string, { msgBacklog?: number }> };
    const backlog = stats.subscriptions?.[c.subscription]?.msgBacklog;
    return typeof backlog === 'number' ? backlog : null;
  }

  private topicPath(): string {
    const c = this.config;
    return [c.domain, c.tenant, c.namespace, c.topic].map(encodeURIComponent).join('/');
  }

  private headers(): Record<string, string> {
    return this.config.token ? { authorization: `Bearer ${this.config.token}` } : {};
  }

  private permit(n: number): void {
    this.socket?.send(JSON.stringify({ type: 'permit', permitMessages: n }));
  }

  private received(text: string): void {
    let frame: PulsarFrame;
    try {
      frame = JSON.parse(text) as PulsarFrame;
    } catch {
      return this.lost(`a frame that is not JSON: ${text.slice(0, 100)}`);
    }
    // Answers to our own frames (an ack's or permit's error) carry no messageId.
    if (typeof frame.messageId !== 'string') {
      this.ctx.log.debug('pulsar frame without a message', { frame: text.slice(0, 200) });
      return;
    }
    this.pending.push(frame);
    if (!this.flushing) void this.flush();
  }

  /** Publishes what has arrived, a batch at a time; acknowledges each batch once published and
   * permits as many messages again. */
  private async flush(): Promise<void> {
    this.flushing = true;
    try {
      while (this.pending.length > 0 && !this.closing) {
        const batch = this.pending.splice(0, this.config.receiverQueueSize);
        const published = await this.ctx.deliver(batch.map((f) => pulsarRecord(this.config, f)));
        if (!published || this.closing) return;
        const socket = this.socket!;
        for (const f of batch) socket.send(JSON.stringify({ type: 'ack', messageId: f.messageId }));
        this.permit(batch.length);
      }
    } catch (err) {
      this.lost('acknowledgement failed', err);
    } finally {
      this.flushing = false;
    }
  }

  private lost(what: string, err?: unknown): void {
    if (this.closing) return;
    this.failure.fail(err === undefined ? new ConsumerError(`pulsar: ${what}`, true) : this.error(err, `${what}: `));
  }

  private error(err: unknown, prefix = ''): ConsumerError {
    if (err instanceof ConsumerError) return err;
    const network = networkKindIn(err);
    return new ConsumerError(`pulsar${network ? ` (${network})` : ''}: ${prefix}${safeMessage(err, pulsarSecrets(this.config))}`, true, { cause: err });
  }
}

function hint(status: number): string {
  if (status === 404) return ': the tenant, namespace or topic does not exist (or the WebSocket service is off: webSocketServiceEnabled)';
  if (status === 401 || status === 403) return ': check the token';
  return '';
}

/** The fields a PULSAR command's templates read: topic (the full name), key, value, properties,
 * messageId, publishTime, eventTime, redeliveryCount. */
function pulsarRecord(c: PulsarConfig, f: PulsarFrame): InboundRecord {
  const value = Buffer.from(f.payload ?? '', 'base64');
  return {
    value,
    headers: headerText(f.properties),
    fields: {
      topic: `${c.domain}://${c.tenant}/${c.namespace}/${c.topic}`,
      shortTopic: c.topic,
      key: f.key ?? '',
      value,
      properties: f.properties ?? {},
      messageId: f.messageId,
      publishTime: f.publishTime ?? '',
      eventTime: f.eventTime ?? '',
      redeliveryCount: f.redeliveryCount ?? 0,
    },
  };
}
