// Owns loading a CommonJS package on first use, synchronously: lazyImport's twin for the callers
// that cannot wait (a configuration file read at start, a hash checked while the configuration is
// validated, a pool made in a constructor). A leaf: it imports nothing of the broker.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** A function that loads the package `name` on its first call and answers it on every call (a
 * failure throws the loader's error, and is tried again on the next call). */
export function lazyRequire<M>(name: string): () => M {
  let loaded: M | undefined;
  return () => (loaded ??= require(name) as M);
}
