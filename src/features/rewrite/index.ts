// Topic rewrite (EMQX's rewrite rules): see docs/features/topic-rewrite.md.
export { rewrite } from './feature.ts';
export type { Rewrite, RewriteStatus } from './rewrite.ts';
export { CompiledRewrite, checkRewriteRules, type RewriteRule, type RewriteWorkerState } from './rules.ts';
export { WorkerRewrite } from './worker-rewrite.ts';
