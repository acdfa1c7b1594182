// The accept queue a listening socket gets without serverOptions.backlog: its own module, so a
// worker opening listeners does not load the endpoint schemas (endpoint-config.ts) with it.

/** Accept queue of a listening socket without serverOptions.backlog (the kernel caps it at net.core.somaxconn). */
export const DEFAULT_BACKLOG = 1024;
