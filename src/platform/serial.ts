// Runs writes one at a time, in the order asked: a check made inside one (a name taken, a
// namespace overlapping) still holds when its store write lands. A failed write does not stop
// the ones after it.
export class Serial {
  private tail: Promise<unknown> = Promise.resolve();

  run<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.tail.then(fn, fn);
    this.tail = run.catch(() => undefined);
    return run;
  }
}
