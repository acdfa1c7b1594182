// Client tracing on one worker: the set of traced client ids, applied to its connections.
import type { TraceSpec } from '../../features/tracing/worker-traces.ts';
import type { Op } from './types.ts';

export const traceOps = {
  'traces.set'(args: { traces: TraceSpec[] }, env): void {
    env.traces.set(args.traces, env.connections);
  },
} satisfies Record<string, Op>;
