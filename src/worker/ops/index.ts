// The table of every worker operation, by name (see types.ts).
import type { Op } from './types.ts';
import { metricsOps } from './metrics.ts';
import { endpointOps } from './endpoints.ts';
import { systemOps } from './system.ts';
import { clientOps } from './clients.ts';
import { subscriptionOps } from './subscriptions.ts';
import { ruleOps } from './rules.ts';
import { logTopicOps } from './log-topics.ts';
import { traceOps } from './traces.ts';
import { logOps } from './logs.ts';
import { scriptOps } from './scripts.ts';
import { bridgeOps } from './bridges.ts';
import { clusterOps } from './cluster.ts';

export const OPS: Readonly<Record<string, Op>> = {
  ...metricsOps,
  ...endpointOps,
  ...systemOps,
  ...clientOps,
  ...subscriptionOps,
  ...ruleOps,
  ...logTopicOps,
  ...traceOps,
  ...logOps,
  ...scriptOps,
  ...bridgeOps,
  ...clusterOps,
};
