// Tracing: log topics (messages on matching topics written to the log, spec 4.8) and client
// traces (every packet of a client id logged for a bounded time). Log topics are stored and
// replicated across a cluster; traces are kept in memory. Both are installed on every worker
// before it opens its listeners, and run with or without the admin API, which serves their routes.
import { topicFilterProblem } from '../../auth/topic-filter.ts';
import type { Feature } from '../feature.ts';
import { LogTopicManager, type LogTopicDoc } from './log-topic-manager.ts';
import { TraceManager } from './trace-manager.ts';
import { logTopicRoutes } from './log-topic-routes.ts';
import { traceRoutes } from './trace-routes.ts';

export interface Tracing {
  readonly logTopics: LogTopicManager;
  readonly traces: TraceManager;
}

export const tracing: Feature<Tracing> = {
  name: 'tracing',
  async start(ctx) {
    const workers = { runningWorkers: ctx.workers.running, call: ctx.workers.call, onWorkerStart: ctx.workers.onWorkerStart };
    const logTopics = new LogTopicManager({ ...workers, ...ctx.routing }, ctx.store, ctx.log, topicFilterProblem);
    await logTopics.load();
    ctx.replicate('log-topic', (id, doc) => logTopics.applyStored(id, doc as LogTopicDoc | null));
    const traces = new TraceManager(workers, ctx.log);
    return {
      api: { logTopics, traces },
      routes: () => [...logTopicRoutes(logTopics), ...traceRoutes(traces)],
      close: () => traces.close(),
    };
  },
};
