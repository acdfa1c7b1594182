// Just enough of qlobber's API for the trie benchmark.
declare module 'qlobber' {
  export class Qlobber {
    constructor(options?: { separator?: string; wildcard_one?: string; wildcard_some?: string; match_empty_levels?: boolean });
    add(topic: string, value: unknown): this;
    match(topic: string): unknown[];
  }
  const qlobber: { Qlobber: typeof Qlobber };
  export default qlobber;
}
