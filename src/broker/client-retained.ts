// How many retained messages clients see: the retained store less the broker's own $SYS topics,
// which a subscription to `#` does not match ([MQTT-4.7.2-1]) and so the Messages page (its `#`
// query) does not list. The console's overview counts with it, so both pages agree.
import type { RetainedStore } from '../native/index.ts';

/** The $SYS part is a few dozen records (the broker's statistics), so matching it is cheap. */
export function clientRetainedCount(retained: Pick<InstanceType<typeof RetainedStore>, 'size' | 'match'>): number {
  return retained.size - framedRecords(retained.match('$SYS/#'));
}

/** Records in a `[u32 LE length][record]...` buffer (the framing of RetainedStore.match). */
function framedRecords(buf: Buffer): number {
  let n = 0;
  for (let at = 0; at + 4 <= buf.length; at += 4 + buf.readUInt32LE(at)) n++;
  return n;
}
