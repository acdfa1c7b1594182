// FEATURES: the features built from the contract of src/features/feature.ts, in start order (a
// feature may use those before it). Adding a feature is its folder and one line here.
import type { Feature } from '../features/feature.ts';
import { proxySubscriptions } from '../features/proxy-subscriptions/index.ts';
import { tracing } from '../features/tracing/index.ts';
import { commands } from '../features/commands/index.ts';
import { scripts } from '../features/scripts/index.ts';
import { drain } from '../features/drain/index.ts';
import { clientDb } from '../features/client-db/index.ts';
import { bans } from '../features/bans/index.ts';
import { overload } from '../features/overload/index.ts';
import { rateLimits } from '../features/rate-limits/index.ts';
import { revocation } from '../features/revocation/index.ts';
import { sparkplug } from '../features/sparkplug/index.ts';
import { rewrite } from '../features/rewrite/index.ts';
import { exclusive } from '../features/exclusive/index.ts';
import { schemaRegistry } from '../features/schema-registry/index.ts';
import { delayed } from '../features/delayed/index.ts';
import { otelTraces } from '../features/otel-traces/index.ts';
import { otel } from '../features/otel/index.ts';
import { topicMetrics } from '../features/topic-metrics/index.ts';
import { slowSubs } from '../features/slow-subs/index.ts';

export const FEATURES: readonly Feature[] = [
  // First: its log export sees the others start, and it stops last, sending what is left.
  otel,
  scripts,
  proxySubscriptions,
  tracing,
  drain,
  clientDb,
  bans,
  overload,
  rateLimits,
  revocation,
  sparkplug,
  rewrite,
  exclusive,
  schemaRegistry,
  delayed,
  topicMetrics,
  slowSubs,
  otelTraces,
  // Last: they publish into the broker, and stop first.
  commands,
];
