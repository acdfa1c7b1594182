// The worker's half of delayed publish: a PUBLISH to `$delayed/{seconds}/{topic}` is checked
// here (its form, the publisher's ACL on {topic}) and handed to the main thread, which stores it
// before the worker acknowledges it (nothing acknowledged is lost). The hand-overs of one tick go
// in one post, their answers come back the same way. At due time the main thread asks a worker to
// check the publisher's ACL again (authorize()). Off (one flag test per `$` topic) until the
// feature sends its state.
import type { Authorizer, ClientIdentity } from '../../auth/types.ts';
import type { Message } from '../../broker/message.ts';
import type { DelayedPublishes } from '../../engine/handlers/client.ts';
import type { DelayedAccept, DelayedPublisher, DelayedReply, DelayedWorkerState } from './types.ts';
import { MAX_DELAY_SECONDS, parseDelayed } from './topic.ts';

/** Longer than the main thread takes to store: it always answers first. */
const ACCEPT_TIMEOUT_MS = 30_000;

/** The worker's refusals since its last post (the main thread counts what it stores). */
export interface DelayedRefusals {
  invalid: number;
  denied: number;
}

/** What a worker posts to the main thread, once per tick. */
export interface DelayedPost {
  items: DelayedAccept[];
  refusals: DelayedRefusals;
}

export class WorkerDelayed implements DelayedPublishes {
  enabled = false;
  maxInterval = MAX_DELAY_SECONDS;
  private refusals: DelayedRefusals = { invalid: 0, denied: 0 };
  private flushing = false;
  private nextId = 1;
  private batch: DelayedAccept[] = [];
  private readonly pending = new Map<number, { resolve(rc: number): void; timer: NodeJS.Timeout }>();

  constructor(
    private readonly post: (p: DelayedPost) => void,
    private readonly authorizerFor: (who: ClientIdentity) => Authorizer,
  ) {}

  setState(s: DelayedWorkerState): void {
    this.enabled = s.enabled;
    this.maxInterval = s.maxInterval;
  }

  parse(topic: string, now: number): { topic: string; dueAt: number } | { error: string } {
    const p = parseDelayed(topic, this.maxInterval);
    return 'error' in p ? p : { topic: p.topic, dueAt: now + p.seconds * 1000 };
  }

  refused(reason: 'invalid' | 'denied'): void {
    this.refusals[reason]++;
    this.schedule();
  }

  /** Hands a delayed message to the main thread: resolves with 0 once stored, else the MQTT
   * reason code it was refused with (0x97 quota, 0x80 not stored). Never rejects. */
  accept(message: Message, target: string, dueAt: number, who: ClientIdentity): Promise<number> {
    const id = this.nextId++;
    const publisher: DelayedPublisher = { clientId: who.clientId, username: who.username ?? null };
    if (who.superuser === true) publisher.superuser = true;
    if (who.acl !== undefined) publisher.acl = who.acl;
    this.batch.push({
      id,
      topic: target,
      // Copies: the payload and properties are views of the connection's read buffer.
      payload: message.payload.slice(),
      qos: message.qos,
      retain: message.retain,
      props: message.props === null ? null : message.props.slice(),
      expiresAt: message.expiresAt,
      receivedAt: message.receivedAt,
      dueAt,
      publisher,
    });
    this.schedule();
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        resolve(0x80);
      }, ACCEPT_TIMEOUT_MS);
      this.pending.set(id, { resolve, timer });
    });
  }

  answer(replies: readonly DelayedReply[]): void {
    for (const r of replies) {
      const p = this.pending.get(r.id);
      if (!p) continue;
      this.pending.delete(r.id);
      clearTimeout(p.timer);
      p.resolve(r.rc);
    }
  }

  /** At due time: may these publishers still publish to these topics? (their ACL now) */
  async authorize(items: readonly { publisher: DelayedPublisher; topic: string }[]): Promise<boolean[]> {
    return Promise.all(items.map(({ publisher, topic }) => {
      const who: ClientIdentity = { clientId: publisher.clientId };
      if (publisher.username !== null) who.username = publisher.username;
      if (publisher.superuser) who.superuser = true;
      if (publisher.acl) who.acl = publisher.acl;
      const authorizer = this.authorizerFor(who);
      if (authorizer.allowsEverything) return true;
      return authorizer.authorize(who, 'publish', topic);
    }));
  }

  private schedule(): void {
    if (this.flushing) return;
    this.flushing = true;
    setImmediate(() => this.flush());
  }

  private flush(): void {
    this.flushing = false;
    const items = this.batch;
    const refusals = this.refusals;
    this.batch = [];
    this.refusals = { invalid: 0, denied: 0 };
    this.post({ items, refusals });
  }
}
