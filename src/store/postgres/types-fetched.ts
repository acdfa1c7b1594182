// Owns a workaround for postgres.js 3.4.9: every new connection of a pool first queries the catalog
// for the array types, and that query's promise is dropped, so its failure (the server going away
// at that moment, a reconnect during an outage) is an unhandled rejection that ends the thread
// (porsager/postgres#1192, #1205, #1223). The types are kept in the pool's shared options once one
// connection fetched them, so after the first answered query the pool's later connections, the
// reconnects included, skip the query. The store needs the array types (its statements take
// arrays), so it cannot turn them off as the data sources do; the connections a pool opens
// together at first, and a pool made anew after an outage, still fetch them: that window stays,
// and the threads log an unhandled rejection instead of ending.
import type postgres from 'postgres';

export function typesFetched(sql: postgres.Sql<any>): void {
  const options = sql.options as { fetch_types?: boolean };
  if (options.fetch_types) options.fetch_types = false;
}

