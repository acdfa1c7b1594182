// WorkerRewrite: topic rewrite's half on a worker thread. The handlers read `current` (its
// `active` is false without rules: one check per packet); the state replaces it whole.
import { CompiledRewrite, type RewriteWorkerState } from './rules.ts';

export class WorkerRewrite {
  current = new CompiledRewrite([], null);

  setState(s: RewriteWorkerState): void {
    this.current = new CompiledRewrite(s.rules, new Uint32Array(s.counts));
  }
}
