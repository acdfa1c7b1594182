// Scripts and extensions: `convert(topic, payload)` scripts and extension modules run on the
// PUBLISHes their filters match, by each worker's pool threads, never on a listener thread.
// Stored and replicated across a cluster; every worker gets the set as state before it opens its
// listeners, and runs them with or without the admin API, which serves their routes.
import type { Feature } from '../feature.ts';
import { ProcessorManager } from './manager.ts';
import { registerProcessorMetrics } from './metrics.ts';
import { extensionRoutes, scriptRoutes } from './routes.ts';

export const scripts: Feature<ProcessorManager> = {
  name: 'scripts',
  async start(ctx) {
    const processors = new ProcessorManager(
      { setProcessorState: (state) => ctx.setWorkerState('processors', state), callAll: ctx.workers.callAll },
      ctx.store, ctx.config.extensions.dir, ctx.log,
    );
    await processors.load();
    for (const kind of ['script', 'extension'] as const) ctx.replicate(kind, (id, doc) => processors.applyStored(kind, id, doc as never));
    registerProcessorMetrics(ctx.registry, processors);
    return { api: processors, routes: () => [...scriptRoutes(processors), ...extensionRoutes(processors)] };
  },
};
