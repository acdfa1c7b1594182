// Owns loading a module on first use (issue 26: a light start). A driver library (mysql2, ioredis,
// kafkajs, mongodb, postgres, amqplib, nodemailer, mqtt.js, ...) costs tens to hundreds of ms and
// MB to import, so the main thread imports none of them at start: the source, command, channel or
// bridge that needs one loads it (usually through our own file that wraps it) when it is created.
// A leaf: it imports nothing, so any module may use it.

/** A module could not be loaded (not installed, or it threw while it was evaluated). Reported by
 * the object that needed it (a source's health and check, a command's state, a delivery, a
 * bridge's lastError), never thrown at the broker. */
export class ModuleLoadError extends Error {
  constructor(
    /** What was being loaded, as a reader knows it: the library's name (`ioredis`). */
    readonly module: string,
    cause: unknown,
  ) {
    super(`cannot load ${module}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'ModuleLoadError';
  }
}

/**
 * A function that loads a module once: the first call starts `load` (an `import()` with a literal
 * specifier, so the build rewrites it like a static import), every call answers the same promise.
 * A failure is kept too (it rejects with a ModuleLoadError naming `name` every time): a module
 * that did not load will not load later in this process.
 */
export function lazyImport<M>(name: string, load: () => Promise<M>): () => Promise<M> {
  let loading: Promise<M> | undefined;
  return function importOnce(): Promise<M> {
    loading ??= load().catch((err: unknown) => {
      throw new ModuleLoadError(name, err);
    });
    return loading;
  };
}
