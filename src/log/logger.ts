// Owns the structured logger: one JSON line per call
// ({"time","level","name","msg",...fields}), child loggers with bound fields, and a level
// threshold checked before anything else is done.
import { LEVEL_RANK, isLogLevel, type LogLevel } from './levels.ts';
import { toJsonLine } from './serialize.ts';

export type LogFields = Record<string, unknown>;

export interface Logger {
  readonly level: LogLevel;
  readonly name: string | undefined;
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** A logger writing to the same stream at the same level, with `fields` in every line. */
  child(fields: LogFields): Logger;
  isLevelEnabled(level: LogLevel): boolean;
}

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
  return new JsonLogger(options.level, options.name, options.stream ?? process.stdout, undefined);
}

class JsonLogger implements Logger {
  readonly level: LogLevel;
  readonly name: string | undefined;
  private readonly threshold: number;
  private readonly stream: NodeJS.WritableStream;
  private readonly bound: LogFields | undefined;

  constructor(level: LogLevel, name: string | undefined, stream: NodeJS.WritableStream, bound: LogFields | undefined) {
    this.level = level;
    this.name = name;
    this.threshold = LEVEL_RANK[level];
    this.stream = stream;
    this.bound = bound;
  }

  debug(msg: string, fields?: LogFields): void {
    if (this.threshold > 10) return;
    this.write('debug', msg, fields);
  }

  info(msg: string, fields?: LogFields): void {
    if (this.threshold > 20) return;
    this.write('info', msg, fields);
  }

  warn(msg: string, fields?: LogFields): void {
    if (this.threshold > 30) return;
    this.write('warn', msg, fields);
  }

  error(msg: string, fields?: LogFields): void {
    this.write('error', msg, fields);
  }

  child(fields: LogFields): Logger {
    const bound = this.bound === undefined ? { ...fields } : { ...this.bound, ...fields };
    return new JsonLogger(this.level, this.name, this.stream, bound);
  }

  isLevelEnabled(level: LogLevel): boolean {
    return LEVEL_RANK[level] >= this.threshold;
  }

  private write(level: LogLevel, msg: string, fields: LogFields | undefined): void {
    const record: Record<string, unknown> = { time: new Date().toISOString(), level };
    if (this.name !== undefined) record.name = this.name;
    record.msg = msg;
    if (this.bound !== undefined) addFields(record, this.bound);
    if (fields !== undefined) addFields(record, fields);
    this.stream.write(toJsonLine(record));
  }
}

function addFields(record: Record<string, unknown>, fields: LogFields): void {
  for (const key of Object.keys(fields)) {
    record[RESERVED.has(key) ? `_${key}` : key] = fields[key];
  }
}
