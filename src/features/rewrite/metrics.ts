// Topic rewrite's metrics: the topics each rule rewrote, read from the workers' shared counters.
import { Counter, type Registry } from 'prom-client';

import type { Rewrite } from './rewrite.ts';

export function registerRewriteMetrics(registry: Registry, rewrite: Rewrite): void {
  new Counter({
    name: 'spindle_rewrite_total',
    help: 'Topics (PUBLISH names, will topics, SUBSCRIBE/UNSUBSCRIBE filters) each topic rewrite rule rewrote, by its position and source filter (a rule kept through a change of the rules keeps its count).',
    labelNames: ['rule', 'source_filter'],
    registers: [registry],
    collect() {
      this.reset();
      const st = rewrite.status();
      for (const r of st.rules) this.inc({ rule: String(r.position), source_filter: r.sourceFilter }, r.rewritten);
    },
  });
}
