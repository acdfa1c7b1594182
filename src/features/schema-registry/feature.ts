// The schema registry (issue 29): named Protobuf, Avro and JSON schemas, stored and replicated,
// on every worker for the rule SQL's schema_decode()/schema_encode() and for schema checks on
// topic filters (a PUBLISH that does not decode is refused). Runs with or without the admin API,
// which serves its routes.
import type { Feature } from '../feature.ts';
import { CHECK_KIND, SCHEMA_KIND, SchemaRegistry } from './registry.ts';
import { schemaRoutes } from './routes.ts';
import { SchemaRuntime } from './runtime.ts';

export const schemaRegistry: Feature<SchemaRegistry> = {
  name: 'schema-registry',
  async start(ctx) {
    const runtime = new SchemaRuntime(ctx.log).install();
    const registry = new SchemaRegistry(ctx.store, ctx.log, ctx.registry, runtime, (state) => ctx.setWorkerState('schemaRegistry', state));
    await registry.load();
    ctx.replicate(SCHEMA_KIND, (id, doc) => registry.applySchema(id, doc));
    ctx.replicate(CHECK_KIND, (id, doc) => registry.applyCheck(id, doc));
    return { api: registry, routes: () => schemaRoutes(registry) };
  },
};
