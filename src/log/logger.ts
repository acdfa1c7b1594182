// Owns the structured logger: one JSON line per call
// ({"time","level","name","msg",...fields}), child loggers with bound fields, and a level
// threshold checked before anything else is done. A root logger and its children share one
// state: the threshold (settable at run time with setLogLevel) and the sinks (addLogSink) that
// get every line besides the stream. Owned by the thread that created the root.
import { LEVEL_RANK, isLogLevel, type LogLevel } from './levels.ts';
import { toJsonLine } from './serialize.ts';

export type LogFields = Record<string, unknown>;

export interface Logger {
  /** The current threshold (shared by a root logger and all its children). */
  readonly level: LogLevel;
  readonly name: string | undefined;
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** A logger writing to the same stream at the same level, with `fields` in every line. */
  child(fields: LogFields): Logger;
  /** A child that writes under another name (the `name` key, the log store's module). */
  named(name: string): Logger;
  /** Writes a line at `level` whatever the threshold (an operator's entry). */
  force(level: LogLevel, msg: string, fields?: LogFields): void;
  isLevelEnabled(level: LogLevel): boolean;
}

/** Gets every line a logger tree writes, as written (ending in a newline). */
export type LogSink = (line: string) => void;

/** Gets every log line of a node as written (one JSON object, without its newline) and the
 * thread that wrote it: 'main', or 'worker-<n>' (src/node/node-log.ts). */
export type LogLineSink = (line: string, thread: string) => void;

export interface LoggerOptions {
  level: LogLevel;
  name?: string;
  /** Where lines go; process.stdout by default. */
  stream?: NodeJS.WritableStream;
}

/** Keys every line starts with; a field of the same name is written with a leading underscore. */
const RESERVED = new Set(['time', 'level', 'name', 'msg']);

export function createLogger(options: LoggerOptions): Logger {
  if (!isLogLevel(options.level)) {
    throw new TypeError(`createLogger: level must be one of debug, info, warn, error (got ${JSON.stringify(options.level)})`);
  }
  const shared: SharedState = { level: options.level, threshold: LEVEL_RANK[options.level], sinks: [] };
  return new JsonLogger(shared, options.name, options.stream ?? process.stdout, undefined);
}

/** Changes the threshold of `logger`, its root and every child of the root. */
export function setLogLevel(logger: Logger, level: LogLevel): void {
  if (!isLogLevel(level)) throw new TypeError(`setLogLevel: level must be one of debug, info, warn, error (got ${JSON.stringify(level)})`);
  const shared = stateOf(logger);
  shared.level = level;
  shared.threshold = LEVEL_RANK[level];
}

/** Adds a sink to the tree of `logger`; answers the function that removes it. */
export function addLogSink(logger: Logger, sink: LogSink): () => void {
  const shared = stateOf(logger);
  shared.sinks = [...shared.sinks, sink];
  return () => {
    shared.sinks = shared.sinks.filter((s) => s !== sink);
  };
}

function stateOf(logger: Logger): SharedState {
  if (!(logger instanceof JsonLogger)) throw new TypeError('not a logger made by createLogger');
  return logger.shared;
}

interface SharedState {
  level: LogLevel;
  threshold: number;
  /** Replaced (never mutated) when a sink comes or goes, so a write in progress sees one list. */
  sinks: readonly LogSink[];
}

class JsonLogger implements Logger {
  readonly name: string | undefined;
  readonly shared: SharedState;
  private readonly stream: NodeJS.WritableStream;
  private readonly bound: LogFields | undefined;

  constructor(shared: SharedState, name: string | undefined, stream: NodeJS.WritableStream, bound: LogFields | undefined) {
    this.shared = shared;
    this.name = name;
    this.stream = stream;
    this.bound = bound;
  }

  get level(): LogLevel {
    return this.shared.level;
  }

  debug(msg: string, fields?: LogFields): void {
    if (this.shared.threshold > 10) return;
    this.write('debug', msg, fields);
  }

  info(msg: string, fields?: LogFields): void {
    if (this.shared.threshold > 20) return;
    this.write('info', msg, fields);
  }

  warn(msg: string, fields?: LogFields): void {
    if (this.shared.threshold > 30) return;
    this.write('warn', msg, fields);
  }

  error(msg: string, fields?: LogFields): void {
    this.write('error', msg, fields);
  }

  force(level: LogLevel, msg: string, fields?: LogFields): void {
    this.write(level, msg, fields);
  }

  child(fields: LogFields): Logger {
    const bound = this.bound === undefined ? { ...fields } : { ...this.bound, ...fields };
    return new JsonLogger(this.shared, this.name, this.stream, bound);
  }

  named(name: string): Logger {
    return new JsonLogger(this.shared, name, this.stream, this.bound);
  }

  isLevelEnabled(level: LogLevel): boolean {
    return LEVEL_RANK[level] >= this.shared.threshold;
  }

  private write(level: LogLevel, msg: string, fields: LogFields | undefined): void {
    const record: Record<string, unknown> = { time: new Date().toISOString(), level };
    if (this.name !== undefined) record.name = this.name;
    record.msg = msg;
    if (this.bound !== undefined) addFields(record, this.bound);
    if (fields !== undefined) addFields(record, fields);
    const line = toJsonLine(record);
    this.stream.write(line);
    for (const sink of this.shared.sinks) sink(line);
  }
}

function addFields(record: Record<string, unknown>, fields: LogFields): void {
  for (const key of Object.keys(fields)) {
    record[RESERVED.has(key) ? `_${key}` : key] = fields[key];
  }
}
