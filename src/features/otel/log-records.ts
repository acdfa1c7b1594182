// Owns turning one log line of the node into an OpenTelemetry log record: the logger's JSON line
// ({"time","level","name","msg",...fields}, src/log/logger.ts) becomes a timestamp, a severity
// (number and text), the message as body, and the rest as attributes beside the node, the thread
// and the logger's name. Anything else a worker printed (not our JSON) is kept as an INFO record with the line
// as body. Pure: no SDK here (the numbers are OpenTelemetry's SeverityNumber).
import { LEVEL_RANK, isLogLevel, type LogLevel } from '../../log/levels.ts';

/** OpenTelemetry's SeverityNumber of each level (DEBUG 5, INFO 9, WARN 13, ERROR 17). */
const SEVERITY: Readonly<Record<LogLevel, { number: number; text: string }>> = {
  debug: { number: 5, text: 'DEBUG' },
  info: { number: 9, text: 'INFO' },
  warn: { number: 13, text: 'WARN' },
  error: { number: 17, text: 'ERROR' },
};

/** An attribute value of a log record: OpenTelemetry's AnyValue (nested maps and lists allowed). */
export type LogAttributeValue = string | number | boolean | LogAttributeValue[] | { [key: string]: LogAttributeValue };

export interface LineRecord {
  /** Milliseconds since the epoch: when the line was written. */
  timestamp: number;
  severityNumber: number;
  severityText: string;
  body: string;
  attributes: Record<string, LogAttributeValue>;
}

/** Keys of the line that are not attributes. */
const OWN = new Set(['time', 'level', 'name', 'msg']);
/** Attributes of every record; a field of the same name (a peer's `node`) gets a leading
 * underscore, as the logger does with its own keys. */
const RECORD_ATTRIBUTES = new Set(['node', 'thread', 'logger']);

/**
 * The record of `line` written by `thread` of node `node`, or null when the line is empty or below
 * `minLevel`. A line that is not the logger's JSON is an INFO record with the line as its body.
 */
export function lineRecord(line: string, thread: string, node: string, minLevel: LogLevel): LineRecord | null {
  if (line.trim() === '') return null;
  const parsed = parseObject(line);
  const level = parsed && isLogLevel(parsed.level) ? parsed.level : 'info';
  if (LEVEL_RANK[level] < LEVEL_RANK[minLevel]) return null;
  const severity = SEVERITY[level];
  const attributes: Record<string, LogAttributeValue> = { node, thread };
  if (!parsed) return { timestamp: Date.now(), severityNumber: severity.number, severityText: severity.text, body: line, attributes };
  if (typeof parsed.name === 'string') attributes.logger = parsed.name;
  for (const key of Object.keys(parsed)) {
    if (OWN.has(key)) continue;
    const value = attributeValue(parsed[key]);
    if (value !== undefined) attributes[RECORD_ATTRIBUTES.has(key) ? `_${key}` : key] = value;
  }
  const time = typeof parsed.time === 'string' ? Date.parse(parsed.time) : Number.NaN;
  return {
    timestamp: Number.isFinite(time) ? time : Date.now(),
    severityNumber: severity.number,
    severityText: severity.text,
    body: typeof parsed.msg === 'string' ? parsed.msg : JSON.stringify(parsed.msg ?? ''),
    attributes,
  };
}

function parseObject(line: string): Record<string, unknown> | null {
  if (line.charCodeAt(0) !== 0x7b /* { */) return null;
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
  } catch {
    return null; // not our JSON: kept whole as the body
  }
}

/** A JSON value as an attribute value; null (no value in OpenTelemetry) is left out. */
function attributeValue(value: unknown): LogAttributeValue | undefined {
  if (value === null || value === undefined) return undefined;
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return value;
  if (Array.isArray(value)) return value.map((v) => attributeValue(v) ?? '');
  if (typeof value === 'object') {
    const out: Record<string, LogAttributeValue> = {};
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      const a = attributeValue(v);
      if (a !== undefined) out[k] = a;
    }
    return out;
  }
  return String(value);
}
