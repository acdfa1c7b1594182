// One schema compiled: protobufjs for `.proto` text, avsc for Avro schemas, Ajv for JSON Schema.
// A schema is compiled once (when it is added, and once per thread that uses it); decoding and
// encoding then cost the library's own work per message. Failures throw SchemaCodecError with
// the library's message.
import type protobuf from 'protobufjs';
import type avro from 'avsc';
import type { Ajv } from 'ajv';

import { lazyRequire } from '../../lazy/lazy-require.ts';

import { SchemaCodecError } from './errors.ts';
import type { SchemaType } from './types.ts';

// Loaded with the first schema of their type: a worker without schemas loads none of them (Ajv
// in a worker once cost a third of its fan-in rate; see test/node/light-start.test.ts).
const protobufjs = lazyRequire<typeof protobuf>('protobufjs');
const avsc = lazyRequire<typeof avro>('avsc');
const ajvPackage = lazyRequire<{ Ajv: typeof Ajv }>('ajv');

export interface CompiledSchema {
  readonly type: SchemaType;
  /** The payload decoded to a map (protobuf: `messageType`, or the only message type). */
  decode(payload: Uint8Array, messageType?: string): Record<string, unknown>;
  /** Whether `payload` decodes (the topic check): no map is built where the library allows. */
  valid(payload: Uint8Array, messageType?: string): boolean;
  /** A map encoded to bytes. */
  encode(value: unknown, messageType?: string): Buffer;
  /** Whether `messageType` names a message of the schema (protobuf), or is absent (others):
   * an error message, or null. */
  messageTypeProblem(messageType: string | undefined): string | null;
}

/** Compiles `source` as a schema of `type`: throws Error with the parser's message. */
export function compileSchema(type: SchemaType, source: string): CompiledSchema {
  if (type === 'protobuf') return compileProtobuf(source);
  if (type === 'avro') return compileAvro(source);
  return compileJson(source);
}

/** A plain Uint8Array view of the payload: protobufjs's reader of Node Buffers does not check a
 * string's length against the end of the buffer (a truncated string decodes as a shorter one),
 * its reader of Uint8Arrays does. */
function plain(payload: Uint8Array): Uint8Array {
  return Buffer.isBuffer(payload) ? new Uint8Array(payload.buffer, payload.byteOffset, payload.byteLength) : payload;
}

const TO_OBJECT: protobuf.IConversionOptions = { longs: Number, enums: String, defaults: true, arrays: true, objects: true, oneofs: true };

function compileProtobuf(source: string): CompiledSchema {
  const pb = protobufjs();
  const root = pb.parse(source, { keepCase: true }).root;
  root.resolveAll();
  const types = new Map<string, protobuf.Type>();
  const collect = (ns: protobuf.NamespaceBase): void => {
    for (const nested of ns.nestedArray) {
      if (nested instanceof pb.Type) types.set(nested.fullName.replace(/^\./, ''), nested);
      if (nested instanceof pb.Namespace || nested instanceof pb.Type) collect(nested);
    }
  };
  collect(root);
  if (types.size === 0) throw new Error('the .proto defines no message type');
  const only = types.size === 1 ? [...types.values()][0] : null;
  const typeOf = (messageType: string | undefined): protobuf.Type => {
    if (messageType === undefined || messageType === '') {
      if (only !== null) return only;
      throw new SchemaCodecError(`a message type is needed: one of ${[...types.keys()].join(', ')}`);
    }
    const t = types.get(messageType.replace(/^\./, ''));
    if (t === undefined) throw new SchemaCodecError(`no message type ${messageType} in the schema (it has ${[...types.keys()].join(', ')})`);
    return t;
  };
  return {
    type: 'protobuf',
    decode(payload, messageType) {
      const t = typeOf(messageType);
      try {
        return t.toObject(t.decode(plain(payload)), TO_OBJECT);
      } catch (err) {
        throw new SchemaCodecError(`not a ${t.name}: ${(err as Error).message}`, { cause: err });
      }
    },
    valid(payload, messageType) {
      try {
        typeOf(messageType).decode(plain(payload));
        return true;
      } catch {
        return false;
      }
    },
    encode(value, messageType) {
      const t = typeOf(messageType);
      if (value === null || typeof value !== 'object') throw new SchemaCodecError(`a ${t.name} is encoded from a map`);
      let message: protobuf.Message;
      try {
        message = t.fromObject(value as Record<string, unknown>);
      } catch (err) {
        throw new SchemaCodecError(`not a ${t.name}: ${(err as Error).message}`, { cause: err });
      }
      const problem = t.verify(message);
      if (problem !== null) throw new SchemaCodecError(`not a ${t.name}: ${problem}`);
      return Buffer.from(t.encode(message).finish());
    },
    messageTypeProblem(messageType) {
      try {
        typeOf(messageType);
        return null;
      } catch (err) {
        return (err as Error).message;
      }
    },
  };
}

function noMessageType(kind: string) {
  return (messageType: string | undefined): string | null => (messageType === undefined || messageType === '' ? null : `${kind} schemas take no message type`);
}

function compileAvro(source: string): CompiledSchema {
  const t = avsc().Type.forSchema(JSON.parse(source) as avro.Schema);
  const problem = noMessageType('avro');
  return {
    type: 'avro',
    decode(payload) {
      let v: unknown;
      try {
        v = t.fromBuffer(Buffer.isBuffer(payload) ? payload : Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength));
      } catch (err) {
        throw new SchemaCodecError(`not ${t.name ?? t.typeName}: ${(err as Error).message}`, { cause: err });
      }
      if (v === null || typeof v !== 'object' || Array.isArray(v) || Buffer.isBuffer(v)) return { value: v };
      return v as Record<string, unknown>;
    },
    valid(payload) {
      try {
        t.fromBuffer(Buffer.isBuffer(payload) ? payload : Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength));
        return true;
      } catch {
        return false;
      }
    },
    encode(value) {
      const paths: string[] = [];
      if (!t.isValid(value, { errorHook: (path) => paths.push(path.join('.') || '(the value)') })) {
        throw new SchemaCodecError(`not ${t.name ?? t.typeName}: invalid at ${paths.join(', ')}`);
      }
      return t.toBuffer(value);
    },
    messageTypeProblem: problem,
  };
}

function compileJson(source: string): CompiledSchema {
  const ajv = new (ajvPackage().Ajv)({ allErrors: false, strict: false });
  const validate = ajv.compile(JSON.parse(source) as object);
  const problem = noMessageType('json');
  const parse = (payload: Uint8Array): unknown => {
    try {
      return JSON.parse(Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength).toString('utf8'));
    } catch (err) {
      throw new SchemaCodecError(`not JSON: ${(err as Error).message}`, { cause: err });
    }
  };
  return {
    type: 'json',
    decode(payload) {
      const v = parse(payload);
      if (!validate(v)) throw new SchemaCodecError(`does not match the schema: ${ajv.errorsText(validate.errors)}`);
      if (v === null || typeof v !== 'object' || Array.isArray(v)) return { value: v };
      return v as Record<string, unknown>;
    },
    valid(payload) {
      let v: unknown;
      try {
        v = parse(payload);
      } catch {
        return false;
      }
      return validate(v) === true;
    },
    encode(value) {
      if (!validate(value)) throw new SchemaCodecError(`does not match the schema: ${ajv.errorsText(validate.errors)}`);
      return Buffer.from(JSON.stringify(value));
    },
    messageTypeProblem: problem,
  };
}
