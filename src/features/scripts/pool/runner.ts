// What the pool does with one processor: run it on some messages of a batch. A runner answers,
// per message, what it became: the same message (unchanged), new ones, nothing (dropped), or a
// failure with its reason.
import type { FailureReason } from '../types.ts';

export interface Item {
  /** The input message (index in the task) this one comes from. */
  src: number;
  topic: string;
  payload: Buffer;
  /** A processor changed the topic. */
  topicChanged: boolean;
}

export interface Failure {
  reason: FailureReason;
  message: string;
}

/** undefined: unchanged; []: dropped; else what it became. */
export type Outcome = undefined | Item[] | Failure;

export interface MessageMeta {
  clientId: string;
  qos: 0 | 1 | 2;
  retain: boolean;
}

export interface RunContext {
  meta(src: number): MessageMeta;
  /** Called before each call that may take up to the time limit (the stage watches it). */
  beat(): void;
  /** A console line of the processor's. */
  log(line: string): void;
  /** Enforce the time limit on each call (see script-runner.ts). */
  precise: boolean;
}

export interface Runner {
  /** Resolves once it can run (an extension's module imported and init() done). */
  ready(): Promise<void>;
  run(items: readonly Item[], how: RunContext): Promise<Outcome[]>;
  close(): Promise<void>;
}

export function isFailure(o: Outcome): o is Failure {
  return o !== undefined && !Array.isArray(o);
}
