// FilterTrie: topic filters (wildcards allowed) in one trie, each with its index; asked which
// filters match a topic name, walked once without cutting the topic into strings. Literal levels
// are found by a hash of their text; `+` and `#` children are fields, as in NATS's subject trie.
// Built once per set of filters (immutable), so a worker may hold it without locks.

interface Node {
  lit: Map<number, { level: string; node: Node }[]> | null;
  single: Node | null;
  /** Filters with `#` here (matching this level's parent and below). */
  multi: number[];
  /** Filters ending at this level. */
  end: number[];
}

const newNode = (): Node => ({ lit: null, single: null, multi: [], end: [] });

/** FNV-1a of s[from, to) (32 bits). */
function hashOf(s: string, from: number, to: number): number {
  let h = 0x811c9dc5;
  for (let i = from; i < to; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h;
}

export class FilterTrie {
  private readonly root = newNode();

  /** `filters[i]` has index i; the filters must be valid (topicFilterProblem). */
  constructor(filters: readonly string[]) {
    filters.forEach((f, i) => this.insert(f, i));
  }

  private insert(filter: string, index: number): void {
    let node = this.root;
    for (const level of filter.split('/')) {
      if (level === '#') {
        node.multi.push(index);
        return;
      }
      if (level === '+') {
        node = node.single ??= newNode();
        continue;
      }
      const h = hashOf(level, 0, level.length);
      const lit = (node.lit ??= new Map<number, { level: string; node: Node }[]>());
      let bucket = lit.get(h);
      if (bucket === undefined) lit.set(h, (bucket = []));
      let child = bucket.find((c) => c.level === level);
      if (child === undefined) bucket.push((child = { level, node: newNode() }));
      node = child.node;
    }
    node.end.push(index);
  }

  /** Pushes to `hits` the index of every filter matching the topic name `topic` (each once). */
  match(topic: string, hits: number[]): void {
    this.walk(this.root, topic, 0, true, hits);
  }

  private walk(node: Node, topic: string, pos: number, first: boolean, hits: number[]): void {
    // [MQTT-4.7.2-1] a filter starting with a wildcard matches no topic starting with '$'.
    const wild = !first || topic.charCodeAt(0) !== 36;
    if (wild) for (const i of node.multi) hits.push(i);
    let end = topic.indexOf('/', pos);
    if (end === -1) end = topic.length;
    const last = end === topic.length;
    if (node.lit !== null) {
      const bucket = node.lit.get(hashOf(topic, pos, end));
      if (bucket !== undefined) {
        for (const c of bucket) {
          if (c.level.length !== end - pos || !topic.startsWith(c.level, pos)) continue;
          this.reach(c.node, topic, end, last, hits);
        }
      }
    }
    if (node.single !== null && wild) this.reach(node.single, topic, end, last, hits);
  }

  private reach(node: Node, topic: string, end: number, last: boolean, hits: number[]): void {
    if (last) {
      for (const i of node.end) hits.push(i);
      for (const i of node.multi) hits.push(i); // 'a/#' matches 'a'
    } else {
      this.walk(node, topic, end + 1, false, hits);
    }
  }
}
