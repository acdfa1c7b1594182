// Where a thread's entry module is. The broker runs either from its TypeScript sources (tests and
// development, through tsx) or compiled (lib/, made by `make build`, the way it ships): a module
// that names another module by path names it without extension, and gets the one that matches how
// the caller itself was loaded.

/** The module `relative` (no extension) next to `base` (the caller's import.meta.url). */
export function moduleUrl(relative: string, base: string): URL {
  return new URL(`${relative}${base.endsWith('.ts') ? '.ts' : '.js'}`, base);
}
