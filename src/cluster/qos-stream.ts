// QosStream: how QoS 1/2 messages cross nodes (main thread), a part of the ClusterLink.
// - They go through a JetStream stream (SPINDLE_QOS, subjects `spindle.q.<to>.<from>`, work
//   queue, file storage, replicated like the configuration bucket), not core NATS: a frame is
//   stored by NATS before the publishers of its messages are acknowledged (their PUBACK/PUBREC
//   waits for the stream's), so a message acknowledged is one the cluster has.
// - Each node consumes its own subject through a durable consumer (`node-<name>`), routes each
//   frame here, and acknowledges it to the stream only once routed (and stored, for persistent
//   sessions); a frame not routed (no worker running) is delivered again. So a node that was away
//   (restarting, or NATS lost) gets what was sent to it meanwhile when it is back, in order: the
//   consumer is made anew at start, so frames its earlier run took and never acknowledged do not
//   wait for the acknowledgement timeout and come after later ones.
// - A publish retried after a timeout carries the same message id (`Nats-Msg-Id`): the stream
//   keeps it once.
// - A node that goes down for good: the node adopting its sessions (shared database, see
//   adoption.ts) takes the frames its subject holds once they are here (`takeOver`: sent before
//   the others marked it down), and routes them to those sessions only. Its consumer replaces the
//   gone node's for as long as it takes; frames stored after it started are left to the node.
// - A node stopping routes and acknowledges what it took before it lets go (`close`), so what
//   it forwards for sessions that left it (forwards.ts) is stored first.
// - QoS 0 messages keep to core NATS (ClusterLink): at most once, as MQTT says.
import { AckPolicy, DeliverPolicy, DiscardPolicy, jetstream, jetstreamManager, RetentionPolicy, StorageType, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';

import type { Logger } from '../log/index.ts';
import { token, untoken } from './names.ts';
import type { ClusterPart, ClusterPartContext } from './part.ts';

export const QOS_STREAM = 'SPINDLE_QOS';
/** A frame not taken by its node within this long is dropped by the stream (a node gone for good). */
const MAX_AGE_MS = 24 * 3600_000;
const MAX_BYTES = 1024 * 1024 * 1024;
/** Each try of a publish waits this long for the stream; a frame is given up after TRIES. */
const PUBLISH_TIMEOUT_MS = 5000;
const TRIES = 3;
/** A frame a node took and neither acknowledged nor refused within this long is delivered again. */
const ACK_WAIT_MS = 30_000;
const RETRY_MS = 1000;
const PULL_EXPIRES_MS = 2000;
/** A consumer taking a gone node's frames that no one uses for this long is removed by NATS. */
const TAKE_IDLE_MS = 30_000;
/** How long start waits for JetStream to answer. */
const READY_MS = 30_000;
const nanos = (ms: number) => ms * 1_000_000;

export interface QosStreamCounters {
  /** Frames the stream stored for another node, and the ones it could not take (their
   * publishers were not acknowledged). */
  storedFrames: number;
  storeFailures: number;
  /** Frames taken from this node's subject and routed here; delivered again after a failure. */
  consumedFrames: number;
  redelivered: number;
  routeFailures: number;
  /** Frames of nodes gone taken here for the sessions adopted from them. */
  takenOver: number;
}

export class QosStream implements ClusterPart {
  readonly name = 'qos';
  readonly counters: QosStreamCounters = { storedFrames: 0, storeFailures: 0, consumedFrames: 0, redelivered: 0, routeFailures: 0, takenOver: 0 };
  private js: JetStreamClient | null = null;
  private jsm: JetStreamManager | null = null;
  private log: Logger;
  private nodeName = '';
  /** Stopping takes no more frames; closed sends no more. */
  private stopping = false;
  private closed = false;
  private stopConsumer: (() => void) | null = null;
  /** Frames taken and not yet routed and acknowledged. */
  private readonly routing = new Set<Promise<void>>();
  private consuming: Promise<void> = Promise.resolve();
  private readonly msgPrefix = `${Date.now().toString(36)}.${process.pid}`;
  private msgSeq = 0;

  /** `route` routes the messages of a frame from `source` here, in order with its others
   * (`only`: to the sessions of these client ids only). */
  constructor(log: Logger, private readonly route: (source: string, data: Uint8Array, only?: readonly string[]) => Promise<void>) {
    this.log = log;
  }

  async start(ctx: ClusterPartContext): Promise<void> {
    this.log = ctx.log.named('qos');
    this.nodeName = ctx.nodeName;
    // A clustered JetStream elects its leader first (some seconds on a node just started).
    const deadline = Date.now() + READY_MS;
    for (;;) {
      try {
        this.jsm = await jetstreamManager(ctx.nc);
        break;
      } catch (err) {
        if (Date.now() > deadline) throw new Error(`the cluster needs JetStream, which did not answer within ${READY_MS / 1000} s: ${(err as Error).message}`, { cause: err });
        await new Promise((r) => setTimeout(r, 250));
      }
    }
    this.js = jetstream(ctx.nc);
    await this.ensureStream(Math.min(3, ctx.runningPeers().length + 1));
    this.consuming = this.consume();
  }

  /** Stores a frame for `node`; resolves once the stream has it, rejects when it could not. */
  async send(node: string, frame: Uint8Array): Promise<void> {
    const js = this.js;
    if (!js) throw new Error('the cluster is not joined');
    const msgID = `${this.msgPrefix}.${++this.msgSeq}`;
    const subject = `spindle.q.${token(node)}.${token(this.nodeName)}`;
    let last: unknown;
    for (let i = 0; i < TRIES && !this.closed; i++) {
      try {
        await js.publish(subject, frame, { msgID, timeout: PUBLISH_TIMEOUT_MS });
        this.counters.storedFrames++;
        return;
      } catch (err) {
        last = err;
      }
    }
    this.counters.storeFailures++;
    this.log.warn('cluster: QoS 1/2 messages for another node were not stored by NATS; their publishers are not acknowledged', { node, err: last });
    throw new Error('NATS did not store the messages for another node', { cause: last });
  }

  async close(): Promise<void> {
    this.stopping = true;
    this.stopConsumer?.();
    await this.consuming;
    // What was taken is routed (and forwarded: sent through this stream) before the node lets go.
    await Promise.all(this.routing);
    this.closed = true;
  }

  /** The stream's last sequence now (0: unknown). */
  async lastSeq(): Promise<number> {
    try {
      return this.jsm ? (await this.jsm.streams.info(QOS_STREAM)).state.last_seq : 0;
    } catch {
      return 0;
    }
  }

  /** Whether every frame of this node's subject stored up to stream sequence `mark` was routed
   * and acknowledged here (its consumer's acknowledgement floor passed it, or nothing waits). */
  async routedUpTo(mark: number): Promise<boolean> {
    if (!this.jsm) return true;
    try {
      const info = await this.jsm.consumers.info(QOS_STREAM, `node-${token(this.nodeName)}`);
      return info.ack_floor.stream_seq >= mark || (info.num_pending === 0 && info.num_ack_pending === 0);
    } catch {
      return false;
    }
  }

  /** Whether this node's subject has nothing waiting, and every frame taken was routed. */
  async idle(): Promise<boolean> {
    if (this.routing.size > 0 || !this.jsm) return this.routing.size === 0;
    try {
      const info = await this.jsm.consumers.info(QOS_STREAM, `node-${token(this.nodeName)}`);
      return info.num_pending === 0 && info.num_ack_pending === 0 && this.routing.size === 0;
    } catch {
      return false;
    }
  }

  /**
   * The sessions of `node` (gone) were adopted here: the frames its subject holds now are taken
   * and routed to those sessions only, in order, each acknowledged once routed. Its durable
   * consumer is replaced by one of this node's for the time (a work queue has one consumer per
   * subject; one left behind by a crash here expires after TAKE_IDLE_MS); frames stored after
   * the start are left for the node, back by then.
   */
  async takeOver(node: string, clientIds: readonly string[]): Promise<void> {
    const jsm = this.jsm;
    const js = this.js;
    if (!jsm || !js || this.stopping) return;
    const last = (await jsm.streams.info(QOS_STREAM)).state.last_seq;
    const name = `adopt-${token(node)}`;
    await jsm.consumers.delete(QOS_STREAM, `node-${token(node)}`).catch(() => undefined);
    await jsm.consumers.add(QOS_STREAM, {
      durable_name: name,
      filter_subject: `spindle.q.${token(node)}.>`,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      ack_wait: nanos(ACK_WAIT_MS),
      inactive_threshold: nanos(TAKE_IDLE_MS),
    });
    let taken = 0;
    try {
      const consumer = await js.consumers.get(QOS_STREAM, name);
      while (!this.stopping) {
        const m = await consumer.next({ expires: 1000 });
        if (m === null) break;
        if (m.seq > last) {
          m.nak();
          break;
        }
        const source = untoken(m.subject.slice(m.subject.lastIndexOf('.') + 1));
        let routed: Promise<void> | null = null;
        const done = this.route(source, m.data, clientIds).then(() => m.ackAck().then(() => undefined));
        routed = done.finally(() => this.routing.delete(routed!));
        this.routing.add(routed);
        await routed;
        taken++;
        this.counters.takenOver++;
      }
    } finally {
      await jsm.consumers.delete(QOS_STREAM, name).catch(() => undefined);
      this.log.info('cluster: QoS 1/2 messages of a node that went down taken for its adopted sessions', { node, frames: taken, sessions: clientIds.length });
    }
  }

  private async ensureStream(replicas: number): Promise<void> {
    const jsm = this.jsm!;
    const config = {
      name: QOS_STREAM,
      subjects: ['spindle.q.>'],
      retention: RetentionPolicy.Workqueue,
      storage: StorageType.File,
      discard: DiscardPolicy.Old,
      max_age: nanos(MAX_AGE_MS),
      max_bytes: MAX_BYTES,
      duplicate_window: nanos(120_000),
    };
    try {
      await jsm.streams.info(QOS_STREAM);
      return;
    } catch {
      // not there yet: made below
    }
    try {
      await jsm.streams.add({ ...config, num_replicas: replicas });
    } catch (err) {
      try {
        // Made meanwhile by another node, or fewer JetStream servers than replicas asked for.
        await jsm.streams.info(QOS_STREAM);
      } catch {
        this.log.warn('QoS stream with replicas refused; one replica', { err: (err as Error).message });
        await jsm.streams.add({ ...config, num_replicas: 1 });
      }
    }
  }

  /** Takes this node's frames as long as the part runs; the consumer (and the stream) are made
   * again when NATS lost them. */
  private async consume(): Promise<void> {
    const durable = `node-${token(this.nodeName)}`;
    let fresh = true;
    while (!this.stopping) {
      try {
        await this.ensureStream(1);
        if (fresh) {
          // At start the consumer is made anew: frames an earlier run of this node took and never
          // acknowledged (it died) come again at once and in order, with those after them (the
          // work queue keeps every frame until it is acknowledged).
          await this.jsm!.consumers.delete(QOS_STREAM, durable).catch(() => undefined);
          fresh = false;
        }
        await this.jsm!.consumers.add(QOS_STREAM, {
          durable_name: durable,
          filter_subject: `spindle.q.${token(this.nodeName)}.>`,
          ack_policy: AckPolicy.Explicit,
          deliver_policy: DeliverPolicy.All,
          ack_wait: nanos(ACK_WAIT_MS),
          max_ack_pending: 256,
        });
        const consumer = await this.js!.consumers.get(QOS_STREAM, durable);
        // Pulls renewed every PULL_EXPIRES_MS: a pull lost while the consumer's leader moved (a
        // node's nats-server restarting) stalls the subject that long, not the default 30 s.
        const messages = await consumer.consume({ max_messages: 64, expires: PULL_EXPIRES_MS, abort_on_missing_resource: true });
        this.stopConsumer = () => void messages.stop();
        if (this.stopping) messages.stop();
        for await (const m of messages) {
          if (m.redelivered) this.counters.redelivered++;
          const source = untoken(m.subject.slice(m.subject.lastIndexOf('.') + 1));
          const routed: Promise<void> = this.route(source, m.data).then(() => {
            this.counters.consumedFrames++;
            m.ack();
          }, (err: unknown) => {
            this.counters.routeFailures++;
            this.log.warn('cluster: QoS 1/2 messages from another node not routed here; delivered again', { node: source, err });
            m.nak(RETRY_MS);
          }).finally(() => this.routing.delete(routed));
          this.routing.add(routed);
        }
      } catch (err) {
        if (this.stopping) break;
        this.log.warn('cluster: the QoS stream consumer stopped; starting it again', { err: (err as Error).message });
      }
      if (!this.stopping) await new Promise((r) => setTimeout(r, RETRY_MS));
    }
  }
}
