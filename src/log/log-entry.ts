// Owns the log store's view of one stored line: the entry the admin API answers
// ({id, time, level, module, message, fields}) and the filter a query or download applies
// (lowest level, time range, module, text). A stored line is the logger's JSON line with the
// store's id appended as `logId` (log-store.ts).
import { LEVEL_RANK, isLogLevel, type LogLevel } from './levels.ts';

export interface LogEntry {
  id: number;
  time: string;
  /** DEBUG, INFO, WARN or ERROR. */
  level: string;
  /** The logger's name: main, worker-0, operator, ... */
  module: string;
  message: string;
  fields: Record<string, unknown>;
}

export interface LogFilter {
  /** This level and the ones above it. */
  level?: LogLevel;
  /** Milliseconds since the epoch, inclusive. */
  startTime?: number;
  endTime?: number;
  module?: string;
  /** A substring of the message or of the fields (as JSON). */
  text?: string;
}

/** The entry of a stored line; null for a line that is not a JSON object. */
export function parseEntry(line: string): LogEntry | null {
  let record: unknown;
  try {
    record = JSON.parse(line);
  } catch {
    return null;
  }
  if (typeof record !== 'object' || record === null || Array.isArray(record)) return null;
  const { logId, time, level, name, msg, ...fields } = record as Record<string, unknown>;
  return {
    id: typeof logId === 'number' ? logId : 0,
    time: typeof time === 'string' ? time : '',
    level: (typeof level === 'string' ? level : 'info').toUpperCase(),
    module: typeof name === 'string' ? name : '',
    message: typeof msg === 'string' ? msg : String(msg ?? ''),
    fields,
  };
}

/** A test of entries; `quick` rejects raw lines that cannot match before they are parsed. */
export function compileFilter(f: LogFilter): { quick(line: string): boolean; matches(e: LogEntry): boolean } {
  const minRank = f.level === undefined ? 0 : LEVEL_RANK[f.level];
  // The text as it appears inside a JSON string, when JSON writes it unchanged.
  const plainText = f.text !== undefined && !/["\\\u0000-\u001f\u2028\u2029]/.test(f.text) ? f.text : undefined;
  return {
    quick(line) {
      return plainText === undefined || line.includes(plainText);
    },
    matches(e) {
      const level = e.level.toLowerCase();
      if (minRank > 0 && (!isLogLevel(level) || LEVEL_RANK[level] < minRank)) return false;
      if (f.module !== undefined && e.module !== f.module) return false;
      if (f.startTime !== undefined || f.endTime !== undefined) {
        const t = Date.parse(e.time);
        if (Number.isNaN(t)) return false;
        if (f.startTime !== undefined && t < f.startTime) return false;
        if (f.endTime !== undefined && t > f.endTime) return false;
      }
      if (f.text !== undefined && !e.message.includes(f.text) && !JSON.stringify(e.fields).includes(f.text)) return false;
      return true;
    },
  };
}
