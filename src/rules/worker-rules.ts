// WorkerRules: the rule engine inside one worker thread. Rules are compiled here once (the SQL to
// a function, the republish templates); a PUBLISH finds its rules through the routing core (each
// rule's FROM filters are subscribed under its handle with TAP_WORKER, see Supervisor.setTap),
// events come from the engine (EngineEvents). A rule's output goes to its republish actions,
// which run here after the routing that produced them, and, when it has actions that write to
// data sources, to the main thread in one message per tick (the action pipelines run there:
// a worker never waits on a database). Counters per rule are read by the 'rules.runtime' op.
// A rule whose SQL calls a heavy decoder (schema_decode, spb_decode) is evaluated on a pool thread
// for a PUBLISH of at least RuleOffload.minBytes (offload.ts); its answers are applied here, in
// order, as an inline evaluation's are, and while a rule has evaluations in the pool its later
// messages follow them there, so its outputs keep the order of its messages. Past the pool's
// bound the publisher is paused (RuleOffload.hold) until the pool catches up; only past its hard
// bound (messages no client can be paused for: other workers', other nodes', the broker's,
// WebSocket clients') is a heavy rule evaluated here.
import { TRACEPARENT_FIELD } from './trace-output.ts';
import { withTraceContext } from '../broker/trace-context.ts';
import { NO_PUBLISHER } from '../native/index.ts';
import type { Message } from '../broker/message.ts';
import { EV, type EngineEvent, type EngineEvents } from '../engine/session/events.ts';
import { compileRule, EventContext, parseRule, type CompiledRule, type EventName, type RuleContext } from './sql/index.ts';
import { compileRepublish } from './actions/republish.ts';
import { topicNameProblem } from '../auth/topic-filter.ts';
import type { CompiledRepublish } from './actions/types.ts';
import { NO_ROOM, offloadedRule, ROOM_HOLD, RULE_FAILED, RULE_PASSED, type OffloadedRule, type PooledOutput, type PublishSnapshot, type RuleDone, type RuleOffload, type RuleOutcome } from './offload.ts';

/** A rule as the main thread sends it to every worker. */
export interface RuleSpec {
  id: string;
  /** Its handle in the routing core (unique among sessions and rules). */
  handle: number;
  sql: string;
  /** Configs of its republish actions (validated by the main thread). */
  republish: RepublishConfig[];
  /** Whether it has actions the main thread runs (its outputs are posted there). */
  remote: boolean;
}

export interface RepublishConfig {
  topic: string;
  payload?: string;
  qos?: number;
  retain?: boolean;
}

export interface RuleCounters {
  /** Messages or events the rule's FROM matched. */
  matched: number;
  /** ... that passed WHERE and produced an output. */
  passed: number;
  /** ... that WHERE filtered out. */
  filtered: number;
  /** ... whose evaluation failed (a function refused its input). */
  failed: number;
  republished: number;
  /** Republishes refused: invalid topic, or past the loop bound. */
  republishFailed: number;
  lastError: string | null;
  lastErrorAt: number;
}

/** Republishes of republishes are bounded: a rule loop stops at this depth (counted as failed). */
export const MAX_REPUBLISH_DEPTH = 8;

type Republish = CompiledRepublish;

interface Entry {
  spec: RuleSpec;
  events: EventName[];
  run: CompiledRule;
  republish: Republish[];
  counters: RuleCounters;
  /** What a pool thread needs to evaluate it; null: its SQL calls no heavy decoder. */
  offload: OffloadedRule | null;
  /** Its evaluations in the pool now (kept across a replace, like the counters). */
  flow: { pending: number };
}

/** An evaluation in the pool: what applying its answer needs. */
interface Offloaded {
  entry: Entry;
  depth: number;
  traceparent: string | null;
}

interface Pending {
  rule: Entry;
  topic: string;
  payload: Buffer;
  qos: 0 | 1 | 2;
  retain: boolean;
  depth: number;
  /** The rule's span on a traced message (its traceparent); null: not traced. */
  traceparent: string | null;
}

export interface WorkerRulesHost {
  /** Routes a message the rules made (the broker is its publisher) by rule `ruleId`. A republish of
   * a traced message carries the rule's span as its `traceparent` user property (m.props). */
  publish(m: Message, ruleId: string): void;
  /** Who published: the session `handle` of this thread (undefined: unknown or the broker). */
  publisherOf(handle: number): { clientId: string; username: string | undefined; peerhost: string | undefined } | undefined;
  /** Posts outputs to the main thread (pairs of rule handle and output). */
  postOutputs(items: unknown[]): void;
  readonly node: string;
}

/** The events the engine tells of (PUBLISH comes through the routing core instead). */
const ENGINE_EVENTS = Object.keys(EV) as EngineEvent[];

export class WorkerRules implements EngineEvents {
  private readonly byHandle = new Map<number, Entry>();
  private readonly byId = new Map<string, Entry>();
  private readonly byEvent = new Map<EventName, Entry[]>();
  readonly wants = new Uint8Array(ENGINE_EVENTS.length);
  private outputs: unknown[] = [];
  /** While a rule runs on a traced message (OpenTelemetry traces): the traceparent its outputs
   * carry to the main thread's actions; null otherwise. */
  traceparent: string | null = null;
  private flushScheduled = false;
  private readonly republishQueue: Pending[] = [];
  private draining = false;
  /** The republish depth of the message being routed now (0: a client's message). */
  private depth = 0;
  /** The context of the last message evaluated: the rules of one message share it (and its
   * parsed JSON payload). */
  private lastMessage: Message | null = null;
  private lastContext: RuleContext | null = null;
  private readonly topicCache = new Map<string, Buffer>();
  /** The last republish topic found valid (most rules republish to one topic). */
  private lastGoodTopic = '';
  private offloader: RuleOffload | null = null;

  constructor(private readonly host: WorkerRulesHost) {}

  /** Evaluates rules that call a heavy decoder on `offload`'s pool for large payloads. */
  offloadTo(offload: RuleOffload): this {
    this.offloader = offload;
    return this;
  }

  /** Adds or replaces rules (compiled here; a rule that does not compile is reported, not added). */
  install(specs: readonly RuleSpec[]): { id: string; error: string }[] {
    const errors: { id: string; error: string }[] = [];
    for (const spec of specs) {
      try {
        const parsed = parseRule(spec.sql);
        const had = this.byId.get(spec.id);
        const entry: Entry = {
          spec,
          events: parsed.events,
          run: compileRule(parsed),
          republish: spec.republish.map((c) => compileRepublish(c as unknown as Record<string, unknown>)),
          counters: had?.counters ?? newCounters(),
          offload: parsed.events.includes('PUBLISH') ? offloadedRule(spec, parsed) : null,
          flow: had?.flow ?? { pending: 0 },
        };
        this.remove(spec.id);
        this.byHandle.set(spec.handle, entry);
        this.byId.set(spec.id, entry);
      } catch (err) {
        errors.push({ id: spec.id, error: (err as Error).message });
      }
    }
    this.reindex();
    return errors;
  }

  remove(id: string): boolean {
    const e = this.byId.get(id);
    if (!e) return false;
    this.byId.delete(id);
    this.byHandle.delete(e.spec.handle);
    this.reindex();
    return true;
  }

  /** Keeps only the rules of `ids` (after a worker restart the main thread sends the full set). */
  retain(ids: ReadonlySet<string>): void {
    for (const id of [...this.byId.keys()]) if (!ids.has(id)) this.remove(id);
  }

  counters(): Record<string, RuleCounters> {
    const out: Record<string, RuleCounters> = {};
    for (const [id, e] of this.byId) out[id] = { ...e.counters };
    return out;
  }

  private reindex(): void {
    this.byEvent.clear();
    for (const e of this.byId.values()) {
      for (const ev of e.events) {
        if (ev === 'PUBLISH') continue;
        let list = this.byEvent.get(ev);
        if (!list) this.byEvent.set(ev, (list = []));
        list.push(e);
      }
    }
    for (const ev of ENGINE_EVENTS) this.wants[EV[ev]] = this.byEvent.has(ev) ? 1 : 0;
  }

  /** The id of the rule of `handle`; undefined when no rule has it here. */
  idOf(handle: number): string | undefined {
    return this.byHandle.get(handle)?.spec.id;
  }

  /** A publish matched the rule `handle`'s FROM filters. */
  matched(handle: number, m: Message, publisher: number): void {
    const entry = this.byHandle.get(handle);
    if (entry === undefined) return; // removed meanwhile, or not yet installed here
    let ctx = this.lastContext;
    if (m !== this.lastMessage || ctx === null) {
      ctx = new EventContext('PUBLISH', new PublishFields(m, publisher, this.host) as unknown as Record<string, unknown>);
      this.lastMessage = m;
      this.lastContext = ctx;
    }
    // A heavy rule on a large payload, or behind evaluations of its own still in the pool.
    if (entry.offload !== null && this.offloader !== null && (entry.flow.pending > 0 || (this.offloader.minBytes > 0 && m.payload.length >= this.offloader.minBytes))) {
      if (this.offload(entry, entry.offload, this.offloader, ctx.fields as unknown as PublishFields, publisher)) return;
    }
    this.evaluate(entry, ctx);
  }

  /** Sends one evaluation to the pool; past the pool's bound its publisher (a client of this
   * thread) is paused until the backlog drains, and past the hard bound it is not sent: false
   * (counted: the caller evaluates inline, ahead of what the rule has in the pool). */
  private offload(e: Entry, rule: OffloadedRule, offloader: RuleOffload, f: PublishFields, publisher: number): boolean {
    const room = offloader.room(f.payload.length);
    if (room === NO_ROOM) {
      offloader.overflowed();
      return false;
    }
    if (room === ROOM_HOLD && publisher !== NO_PUBLISHER) offloader.hold(publisher);
    const w = f as unknown as PublishFields & { id: string; clientid: string; username: string | null; peerhost: string | null };
    const fields: PublishSnapshot = { topic: f.topic, payload: f.payload, qos: f.qos, retain: f.retain, timestamp: f.timestamp, id: w.id, clientid: w.clientid, username: w.username, peerhost: w.peerhost };
    e.counters.matched++;
    e.flow.pending++;
    offloader.evaluate(rule, fields, this.answered, { entry: e, depth: this.depth, traceparent: this.traceparent });
    return true;
  }

  /** A pool thread's answer for one evaluation, applied as evaluate() applies its own, under the
   * republish depth and traceparent the message had. */
  private readonly answered: RuleDone<Offloaded> = (o: Offloaded, outcome: RuleOutcome, value: unknown): void => {
    o.entry.flow.pending--;
    const depth = this.depth;
    const traceparent = this.traceparent;
    this.depth = o.depth;
    this.traceparent = o.traceparent;
    try {
      if (outcome === RULE_FAILED) this.failed(o.entry, value as string);
      else if (outcome === RULE_PASSED) this.applyPooled(o.entry, value as PooledOutput);
      else o.entry.counters.filtered++;
    } finally {
      this.depth = depth;
      this.traceparent = traceparent;
    }
  };

  /** EngineEvents.emit: a client or message event (its field names are lower-case). */
  emit(event: EngineEvent, fields: Record<string, unknown>): void {
    const list = this.byEvent.get(event);
    if (list === undefined) return;
    fields.node = this.host.node;
    fields.event = event;
    const ctx = new EventContext(event, fields);
    for (const e of list) this.evaluate(e, ctx);
  }

  private evaluate(e: Entry, ctx: RuleContext): void {
    e.counters.matched++;
    let out: Record<string, unknown> | null;
    try {
      out = e.run(ctx);
    } catch (err) {
      this.failed(e, (err as Error).message);
      return;
    }
    this.apply(e, out);
  }

  private failed(e: Entry, message: string): void {
    const c = e.counters;
    c.failed++;
    c.lastError = message;
    c.lastErrorAt = Date.now();
  }

  /** A pool thread's output, as apply() handles an inline one: its republishes come rendered
   * (topics and payloads: the output itself, often a large decoded map, does not cross back),
   * and the output only when the main thread's actions take it. */
  private applyPooled(e: Entry, p: PooledOutput): void {
    e.counters.passed++;
    for (let k = 0; k < e.republish.length; k++) {
      const topic = p.republish[2 * k];
      if (!this.republishRefused(e, topic)) this.pushRepublish(e, e.republish[k], topic, p.republish[2 * k + 1]);
    }
    if (e.spec.remote && p.out !== null) this.post(e, p.out);
  }

  /** An evaluation's output (null: WHERE filtered it out): counted, republished, posted. */
  private apply(e: Entry, out: Record<string, unknown> | null): void {
    const c = e.counters;
    if (out === null) {
      c.filtered++;
      return;
    }
    c.passed++;
    for (const r of e.republish) this.queueRepublish(e, r, out);
    if (e.spec.remote) this.post(e, out);
  }

  /** Posts an output to the main thread's actions (with the traceparent of a traced message). */
  private post(e: Entry, out: Record<string, unknown>): void {
    if (this.traceparent !== null) out[TRACEPARENT_FIELD] = this.traceparent;
    this.outputs.push(e.spec.handle, out);
    if (!this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(this.flush);
    }
  }

  private queueRepublish(e: Entry, r: Republish, out: Record<string, unknown>): void {
    const topic = r.topic(out);
    if (this.republishRefused(e, topic)) return;
    this.pushRepublish(e, r, topic, r.payload === null ? JSON.stringify(out) : r.payload(out));
  }

  /** Whether a republish to `topic` is refused (counted on the rule): past the loop bound, or
   * not a topic a rule may publish to. */
  private republishRefused(e: Entry, topic: string): boolean {
    const c = e.counters;
    const depth = this.depth + 1;
    let problem: string | null = null;
    if (depth > MAX_REPUBLISH_DEPTH) problem = `republish loop: more than ${MAX_REPUBLISH_DEPTH} republishes deep (topic ${topic})`;
    else if (topic !== this.lastGoodTopic) {
      problem = republishProblem(topic);
      if (problem === null) this.lastGoodTopic = topic;
    }
    if (problem === null) return false;
    c.republishFailed++;
    c.lastError = problem;
    c.lastErrorAt = Date.now();
    return true;
  }

  private pushRepublish(e: Entry, r: Republish, topic: string, payload: string): void {
    this.republishQueue.push({ rule: e, topic, payload: Buffer.from(payload, 'utf8'), qos: r.qos, retain: r.retain, depth: this.depth + 1, traceparent: this.traceparent });
    if (!this.draining) {
      this.draining = true;
      queueMicrotask(this.drain);
    }
  }

  /** Routes the republishes queued while routing (never inside a routing: the router's match
   * buffer is in use then). A republish that matches rules queues theirs, one deeper. */
  private readonly drain = (): void => {
    const q = this.republishQueue;
    try {
      for (let i = 0; i < q.length; i++) {
        const p = q[i];
        this.depth = p.depth;
        const now = Date.now();
        this.host.publish({
          topic: p.topic,
          topicBytes: this.topicBytes(p.topic),
          payload: p.payload,
          qos: p.qos,
          retain: p.retain,
          props: p.traceparent === null ? null : withTraceContext(null, p.traceparent, ''),
          expiresAt: 0,
          receivedAt: now,
          storeId: undefined,
          seq: undefined,
          trace: undefined,
        }, p.rule.spec.id);
        p.rule.counters.republished++;
      }
    } finally {
      q.length = 0;
      this.depth = 0;
      this.draining = false;
    }
  };

  /** A topic's bytes; republishes mostly go to few topics, so the last ones are kept. */
  private topicBytes(topic: string): Buffer {
    let b = this.topicCache.get(topic);
    if (b === undefined) {
      if (this.topicCache.size >= 1024) this.topicCache.clear();
      b = Buffer.from(topic, 'utf8');
      this.topicCache.set(topic, b);
    }
    return b;
  }

  private readonly flush = (): void => {
    this.flushScheduled = false;
    if (this.outputs.length === 0) return;
    const items = this.outputs;
    this.outputs = [];
    this.host.postOutputs(items);
  };
}

function newCounters(): RuleCounters {
  return { matched: 0, passed: 0, filtered: 0, failed: 0, republished: 0, republishFailed: 0, lastError: null, lastErrorAt: 0 };
}

/** Why a rule may not publish to `topic` (null: it may): an invalid topic name, or one of the
 * broker's own ($SYS, $share, ...). */
function republishProblem(topic: string): string | null {
  if (topic.startsWith('$')) return `republish topic ${JSON.stringify(topic)} starts with $ (topics of the broker)`;
  const problem = topicNameProblem(topic);
  return problem === undefined ? null : `republish topic ${JSON.stringify(topic)}: ${problem}`;
}

const MESSAGE = Symbol('message');
const PUBLISHER = Symbol('publisher');
const HOST = Symbol('host');
const WHO = Symbol('who');

type Who = ReturnType<WorkerRulesHost['publisherOf']> | null;

/**
 * The fields of a PUBLISH as rules read them. What every rule needs is set at once; the message
 * id and who published are computed on first read (most rules read neither). The getters are
 * enumerable, so SELECT * has them too.
 */
class PublishFields {
  readonly topic: string;
  readonly payload: Buffer;
  readonly qos: number;
  readonly retain: boolean;
  readonly timestamp: number;
  readonly publish_received_at: number;
  readonly node: string;
  readonly event = 'PUBLISH';
  private readonly [MESSAGE]: Message;
  private readonly [PUBLISHER]: number;
  private readonly [HOST]: WorkerRulesHost;
  private [WHO]: Who | undefined = undefined;

  constructor(m: Message, publisher: number, host: WorkerRulesHost) {
    this.topic = m.topic;
    this.payload = m.payload;
    this.qos = m.qos;
    this.retain = m.retain;
    this.timestamp = m.receivedAt;
    this.publish_received_at = m.receivedAt;
    this.node = host.node;
    this[MESSAGE] = m;
    this[PUBLISHER] = publisher;
    this[HOST] = host;
  }

  private who(): Who {
    if (this[WHO] === undefined) this[WHO] = this[PUBLISHER] === NO_PUBLISHER ? null : (this[HOST].publisherOf(this[PUBLISHER]) ?? null);
    return this[WHO];
  }
}

for (const [name, get] of [
  ['id', function id(this: PublishFields) {
    const m = (this as unknown as { [MESSAGE]: Message })[MESSAGE];
    return `${m.receivedAt.toString(16)}${((m.seq ?? 0) >>> 0).toString(16).padStart(8, '0')}`;
  }],
  ['clientid', function clientid(this: PublishFields) {
    return (this as unknown as { who(): Who }).who()?.clientId ?? '';
  }],
  ['username', function username(this: PublishFields) {
    return (this as unknown as { who(): Who }).who()?.username ?? null;
  }],
  ['peerhost', function peerhost(this: PublishFields) {
    return (this as unknown as { who(): Who }).who()?.peerhost ?? null;
  }],
] as const) {
  Object.defineProperty(PublishFields.prototype, name, { get, enumerable: true });
}
