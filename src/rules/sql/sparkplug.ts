// Decodes a Sparkplug B payload (docs/features/sparkplug.md) into a plain map, for spb_decode() in
// rules and for the edge-node state of src/features/sparkplug: timestamp, seq, uuid, body (base64)
// and metrics, each {name, alias, timestamp, datatype, type, value, is_null, is_historical,
// is_transient, properties}, the value read from the field its datatype names (signed integers
// sign-extended, 64-bit integers as numbers when they are safe integers and as decimal strings
// otherwise, bytes as base64, arrays unpacked as the 3.0 spec packs them). Here because the rule
// SQL imports nothing outside src/rules/sql/.
import { sparkplugPayloadType } from './sparkplug-schema.ts';

/** The Sparkplug B datatypes by number (Sparkplug 3.0, 6.4.16). */
export const DATATYPES: readonly string[] = [
  'Unknown', 'Int8', 'Int16', 'Int32', 'Int64', 'UInt8', 'UInt16', 'UInt32', 'UInt64', 'Float', 'Double',
  'Boolean', 'String', 'DateTime', 'Text', 'UUID', 'DataSet', 'Bytes', 'File', 'Template', 'PropertySet',
  'PropertySetList', 'Int8Array', 'Int16Array', 'Int32Array', 'Int64Array', 'UInt8Array', 'UInt16Array',
  'UInt32Array', 'UInt64Array', 'FloatArray', 'DoubleArray', 'BooleanArray', 'StringArray', 'DateTimeArray',
];

export interface SparkplugMetric {
  name?: string;
  alias?: number | string;
  timestamp?: number | string;
  datatype?: number;
  type?: string;
  value?: unknown;
  is_null?: boolean;
  is_historical?: boolean;
  is_transient?: boolean;
  properties?: Record<string, unknown>;
}

export interface SparkplugPayload {
  timestamp?: number | string;
  seq?: number | string;
  uuid?: string;
  body?: string;
  metrics: SparkplugMetric[];
}

/** A payload that is not a Sparkplug B payload. */
export class SparkplugDecodeError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'SparkplugDecodeError';
  }
}

type Raw = Record<string, unknown>;

/** Decodes `bytes`; throws SparkplugDecodeError when they are not a Sparkplug B payload. */
export function decodeSparkplug(bytes: Uint8Array): SparkplugPayload {
  let raw: Raw;
  try {
    const type = sparkplugPayloadType();
    raw = type.toObject(type.decode(bytes), { longs: String, oneofs: true }) as Raw;
  } catch (err) {
    throw new SparkplugDecodeError(`not a Sparkplug B payload: ${(err as Error).message}`, { cause: err });
  }
  const out: SparkplugPayload = { metrics: [] };
  if (raw.timestamp !== undefined) out.timestamp = long(raw.timestamp);
  if (raw.seq !== undefined) out.seq = long(raw.seq);
  if (raw.uuid !== undefined) out.uuid = raw.uuid as string;
  if (raw.body !== undefined) out.body = base64(raw.body);
  for (const m of (raw.metrics as Raw[] | undefined) ?? []) out.metrics.push(metric(m));
  return out;
}

function metric(m: Raw): SparkplugMetric {
  const out: SparkplugMetric = {};
  if (m.name !== undefined) out.name = m.name as string;
  if (m.alias !== undefined) out.alias = long(m.alias);
  if (m.timestamp !== undefined) out.timestamp = long(m.timestamp);
  if (m.datatype !== undefined) {
    out.datatype = m.datatype as number;
    out.type = DATATYPES[out.datatype] ?? 'Unknown';
  }
  if (m.is_null === true) {
    out.is_null = true;
    out.value = null;
  } else if (typeof m.value === 'string') {
    out.value = valueOf(m.datatype as number | undefined, m.value, m[m.value]);
  }
  if (m.is_historical === true) out.is_historical = true;
  if (m.is_transient === true) out.is_transient = true;
  if (m.properties !== undefined) out.properties = propertySet(m.properties as Raw);
  return out;
}

// The value of a metric, property or parameter of `datatype` held in `field`.
function valueOf(datatype: number | undefined, field: string, v: unknown): unknown {
  switch (field) {
    case 'int_value': {
      const n = v as number;
      if (datatype === 1) return (n << 24) >> 24;
      if (datatype === 2) return (n << 16) >> 16;
      if (datatype === 3) return n | 0;
      return n >>> 0;
    }
    case 'long_value':
      return datatype === 4 ? long(BigInt.asIntN(64, BigInt(v as string)).toString()) : long(v);
    case 'float_value':
    case 'double_value':
    case 'boolean_value':
    case 'string_value':
      return v;
    case 'bytes_value':
      return datatype !== undefined && datatype >= 22 && datatype <= 34 ? array(datatype, v as Uint8Array) : base64(v);
    case 'dataset_value':
      return dataSet(v as Raw);
    case 'template_value':
      return template(v as Raw);
    case 'propertyset_value':
      return propertySet(v as Raw);
    case 'propertysets_value':
      return ((v as Raw).propertyset as Raw[] | undefined ?? []).map(propertySet);
    default:
      return undefined; // an extension value: nothing to read
  }
}

function propertySet(p: Raw): Record<string, unknown> {
  const keys = (p.keys as string[] | undefined) ?? [];
  const values = (p.values as Raw[] | undefined) ?? [];
  const out: Record<string, unknown> = {};
  for (let i = 0; i < keys.length && i < values.length; i++) {
    const v = values[i];
    out[keys[i]] = v.is_null === true ? null : typeof v.value === 'string' ? valueOf(v.type as number | undefined, v.value, v[v.value]) : null;
  }
  return out;
}

function dataSet(d: Raw): Record<string, unknown> {
  const columns = (d.columns as string[] | undefined) ?? [];
  const types = (d.types as number[] | undefined) ?? [];
  const rows = ((d.rows as Raw[] | undefined) ?? []).map((row) =>
    ((row.elements as Raw[] | undefined) ?? []).map((e, i) => (typeof e.value === 'string' ? valueOf(types[i], e.value, e[e.value]) : null)));
  return { columns, types: types.map((t) => DATATYPES[t] ?? 'Unknown'), rows };
}

function template(t: Raw): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  if (t.version !== undefined) out.version = t.version;
  if (t.template_ref !== undefined) out.template_ref = t.template_ref;
  if (t.is_definition !== undefined) out.is_definition = t.is_definition;
  out.metrics = ((t.metrics as Raw[] | undefined) ?? []).map(metric);
  out.parameters = ((t.parameters as Raw[] | undefined) ?? []).map((p) => ({
    name: p.name,
    type: DATATYPES[p.type as number] ?? 'Unknown',
    value: typeof p.value === 'string' ? valueOf(p.type as number | undefined, p.value, p[p.value]) : null,
  }));
  return out;
}

// Sparkplug 3.0 array datatypes, packed little-endian in bytes_value.
function array(datatype: number, b: Uint8Array): unknown[] {
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const read = (size: number, get: (at: number) => unknown): unknown[] => {
    if (b.byteLength % size !== 0) throw new SparkplugDecodeError(`${DATATYPES[datatype]}: ${b.byteLength} bytes is not a whole number of ${size}-byte elements`);
    const out: unknown[] = [];
    for (let at = 0; at < b.byteLength; at += size) out.push(get(at));
    return out;
  };
  switch (datatype) {
    case 22: return read(1, (at) => view.getInt8(at));
    case 23: return read(2, (at) => view.getInt16(at, true));
    case 24: return read(4, (at) => view.getInt32(at, true));
    case 25: return read(8, (at) => long(view.getBigInt64(at, true).toString()));
    case 26: return read(1, (at) => view.getUint8(at));
    case 27: return read(2, (at) => view.getUint16(at, true));
    case 28: return read(4, (at) => view.getUint32(at, true));
    case 29: return read(8, (at) => long(view.getBigUint64(at, true).toString()));
    case 30: return read(4, (at) => view.getFloat32(at, true));
    case 31: return read(8, (at) => view.getFloat64(at, true));
    case 34: return read(8, (at) => long(view.getBigInt64(at, true).toString()));
    case 32: {
      // A 4-byte element count, then the booleans packed 8 a byte, most significant bit first.
      if (b.byteLength < 4) throw new SparkplugDecodeError('BooleanArray: shorter than its 4-byte count');
      const count = view.getUint32(0, true);
      if (b.byteLength < 4 + Math.ceil(count / 8)) throw new SparkplugDecodeError(`BooleanArray: ${count} elements do not fit in ${b.byteLength} bytes`);
      const out: boolean[] = [];
      for (let i = 0; i < count; i++) out.push((b[4 + (i >> 3)] & (0x80 >> (i & 7))) !== 0);
      return out;
    }
    case 33: {
      // UTF-8 strings, each ended by a NUL.
      const out: string[] = [];
      let start = 0;
      for (let i = 0; i < b.byteLength; i++) {
        if (b[i] === 0) {
          out.push(Buffer.from(b.buffer, b.byteOffset + start, i - start).toString('utf8'));
          start = i + 1;
        }
      }
      if (start !== b.byteLength) throw new SparkplugDecodeError('StringArray: the last string has no NUL terminator');
      return out;
    }
    default:
      return [];
  }
}

// A 64-bit integer (a decimal string from protobufjs): a number when it is a safe integer.
function long(v: unknown): number | string {
  const s = String(v);
  const n = Number(s);
  return Number.isSafeInteger(n) ? n : s;
}

function base64(v: unknown): string {
  const b = v as Uint8Array;
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64');
}
