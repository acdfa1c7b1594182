// Turns what a processor returned into messages, on the pool's side: only strings and byte views
// are taken, read with this realm's own intrinsics (a script's context cannot redefine them), and
// a new topic must be a valid topic name a client could publish to.
import { topicNameProblem } from '../../../auth/topic-filter.ts';
import { reservedTopic } from '../../../protocol/reserved-topics.ts';
import type { Failure, Item } from './runner.ts';

const TypedArrayPrototype = Object.getPrototypeOf(Uint8Array.prototype) as object;
const getter = (name: string) => Object.getOwnPropertyDescriptor(TypedArrayPrototype, name)!.get!;
const BUFFER = getter('buffer');
const BYTE_OFFSET = getter('byteOffset');
const BYTE_LENGTH = getter('byteLength');
const DATA_VIEW = Object.getPrototypeOf(new DataView(new ArrayBuffer(0))) as object;
const dvGetter = (name: string) => Object.getOwnPropertyDescriptor(DATA_VIEW, name)!.get!;
const DV_BUFFER = dvGetter('buffer');
const DV_OFFSET = dvGetter('byteOffset');
const DV_LENGTH = dvGetter('byteLength');

/** Bytes of a payload a processor returned: a string (UTF-8) or an ArrayBuffer view of any realm. */
export function payloadBytes(v: unknown): Buffer | null {
  if (typeof v === 'string') return Buffer.from(v, 'utf8');
  if (!ArrayBuffer.isView(v)) return null;
  // This realm's getters read internal slots only (no code of the script runs): a typed
  // array's, else (they refuse it) a DataView's.
  try {
    return Buffer.from(Reflect.apply(BUFFER, v, []) as ArrayBuffer, Reflect.apply(BYTE_OFFSET, v, []) as number, Reflect.apply(BYTE_LENGTH, v, []) as number);
  } catch {
    return Buffer.from(Reflect.apply(DV_BUFFER, v, []) as ArrayBuffer, Reflect.apply(DV_OFFSET, v, []) as number, Reflect.apply(DV_LENGTH, v, []) as number);
  }
}

/** The message a processor made of `from` with `topic` (undefined: the same) and `payload`
 * (undefined: the same), or why it cannot be published. */
export function output(from: Item, topic: unknown, payload: unknown, maxTopicLevels: number): Item | Failure {
  let t = from.topic;
  let changed = from.topicChanged;
  if (topic !== undefined && topic !== from.topic) {
    if (typeof topic !== 'string') return invalid(`topic: expected a string, got ${typeof topic}`);
    const problem = topicNameProblem(topic) ?? (reservedTopic(topic) ? 'a $ topic is the broker\'s' : undefined) ?? (levels(topic) > maxTopicLevels ? `more than ${maxTopicLevels} levels` : undefined);
    if (problem !== undefined) return invalid(`topic ${JSON.stringify(topic.slice(0, 200))}: ${problem}`);
    t = topic;
    changed = true;
  }
  let p = from.payload;
  if (payload !== undefined) {
    const bytes = payloadBytes(payload);
    if (bytes === null) return invalid(`payload: expected a string or bytes (Buffer, Uint8Array), got ${payload === null ? 'null' : typeof payload}`);
    p = bytes;
  }
  return { src: from.src, topic: t, payload: p, topicChanged: changed };
}

function levels(topic: string): number {
  let n = 1;
  for (let i = 0; i < topic.length; i++) if (topic.charCodeAt(i) === 47) n++;
  return n;
}

function invalid(message: string): Failure {
  return { reason: 'invalid', message };
}
