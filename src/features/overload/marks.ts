// The overload marks: from the configuration keys (overload.*), their schema for PUT
// /api/overload/marks, and the checks a schema cannot say (a low mark above its high one).
import { Type } from '@sinclair/typebox';

import type { BrokerConfig } from '../../config/index.ts';
import { invalid } from '../../errors/domain-error.ts';
import type { OverloadMarks } from './types.ts';

export function configMarks(config: BrokerConfig): OverloadMarks {
  const o = config.overload;
  return {
    enabled: o.enabled, lagHighMs: o.lagHighMs, lagLowMs: o.lagLowMs, heapHighMB: o.heapHighMB, heapLowMB: o.heapLowMB,
    rssHighMB: o.rssHighMB, rssLowMB: o.rssLowMB, sampleMs: o.sampleMs, shedQos0: o.shedQos0,
  };
}

const MB = (what: string) => Type.Optional(Type.Integer({ minimum: 0, maximum: 1_048_576, description: what }));

/** A change of the marks: the fields given change. */
export const MARKS_CHANGE = Type.Object(
  {
    enabled: Type.Optional(Type.Boolean({ description: 'overload protection on or off' })),
    lagHighMs: Type.Optional(Type.Integer({ minimum: 1, maximum: 600_000, description: 'event-loop lag (ms, p99 over a sample) above which a worker refuses new connections' })),
    lagLowMs: Type.Optional(Type.Integer({ minimum: 0, maximum: 600_000, description: 'lag (ms) below which it accepts again; at most lagHighMs' })),
    heapHighMB: MB('V8 heap used by a worker (MB) above which it refuses; 0: not watched'),
    heapLowMB: MB('heap (MB) below which it accepts again; at most heapHighMB'),
    rssHighMB: MB('process RSS (MB) above which the workers refuse; 0: not watched'),
    rssLowMB: MB('RSS (MB) below which they accept again; at most rssHighMB'),
    sampleMs: Type.Optional(Type.Integer({ minimum: 50, maximum: 60_000, description: 'how often each worker measures (ms)' })),
    shedQos0: Type.Optional(Type.Boolean({ description: 'drop QoS 0 deliveries to slow clients while overloaded' })),
  },
  { additionalProperties: false },
);

/** The marks after `change`; 400 naming the field when a low mark is above its high one. */
export function changedMarks(current: OverloadMarks, change: Partial<OverloadMarks>): OverloadMarks {
  const next = { ...current, ...change };
  checkMarks(next);
  return next;
}

export function checkMarks(m: OverloadMarks): void {
  if (m.lagLowMs > m.lagHighMs) throw invalid('lagLowMs', `must be at most lagHighMs (${m.lagHighMs})`);
  if (m.heapHighMB > 0 && m.heapLowMB > m.heapHighMB) throw invalid('heapLowMB', `must be at most heapHighMB (${m.heapHighMB})`);
  if (m.rssHighMB > 0 && m.rssLowMB > m.rssHighMB) throw invalid('rssLowMB', `must be at most rssHighMB (${m.rssHighMB})`);
}
