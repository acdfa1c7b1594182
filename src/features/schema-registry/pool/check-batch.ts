// A schema pool thread's check task (task.ts dispatches it): decodes each message of a batch
// with the schemas of the checks its topic matched, off the worker's listener thread. Schemas
// are compiled once per version (compiled.ts).
import { threadId } from 'node:worker_threads';

import { beat, pause } from '../../../threads/heartbeat.ts';
import { compiledOf } from './compiled.ts';
import { CHECK_WORDS } from '../types.ts';
import type { CheckResult, CheckTask } from './check-task.ts';

export function checkBatch(task: CheckTask): CheckResult {
  pause(task.beat);
  const schemas = task.schemas.map(compiledOf);
  const refused = new Uint8Array(task.count);
  const bytes = Buffer.from(task.bytes.buffer, task.bytes.byteOffset, task.bytes.byteLength);
  for (let i = 0; i < task.count; i++) {
    beat(task.beat, task.base, 0);
    const payload = bytes.subarray(task.offsets[i], task.offsets[i + 1]);
    for (let k = task.listStart[i]; k < task.listStart[i + 1]; k++) {
      const check = task.checks[k];
      const schema = schemas[task.checkSchema[check]];
      const messageType = task.messageTypes[check];
      if (schema === null || !schema.valid(payload, messageType === '' ? undefined : messageType)) {
        refused[i] = 1;
        break;
      }
    }
  }
  if (task.counters !== null) Atomics.add(new BigInt64Array(task.counters), CHECK_WORDS.pooled, BigInt(task.count));
  return { refused, threadId };
}
