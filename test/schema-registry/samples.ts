// The Protobuf payloads of the schema offload tests (offload.test.ts, rule-offload.test.ts): a
// Samples message from a .proto written here, about 8 KiB at BIG values, and one that does not
// decode.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

import protobuf from 'protobufjs';

/** A directory for the test's files (the .proto among them). */
export const dir = mkdtempSync(path.join(tmpdir(), 'spindle-schema-samples-'));
export const PROTO = `syntax = "proto3";
package big;
message Samples {
  repeated uint32 v = 1;
  string tag = 2;
}
`;
const protoFile = path.join(dir, 'samples.proto');
writeFileSync(protoFile, PROTO);
export const Samples = (await protobuf.load(protoFile)).lookupType('big.Samples');

/** A Samples message: `n` values of two varint bytes each (n = 4000: about 8 KiB). */
export function samples(tag: string, n: number): Buffer {
  return Buffer.from(Samples.encode(Samples.create({ v: Array.from({ length: n }, (_, i) => 200 + (i % 1000)), tag })).finish());
}
export const BIG = 4000;
/** A varint that runs past the end: not a Samples. */
const BROKEN_TAIL = Buffer.from([0x08, 0xff]);
export const bad = (tag: string, n: number): Buffer => Buffer.concat([samples(tag, n), BROKEN_TAIL]);
