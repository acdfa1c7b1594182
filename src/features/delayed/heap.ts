// A binary min-heap of delayed messages by due time (ms since the epoch): the node that fires
// keeps one timer, for the earliest. Entries are (dueAt, id) pairs in two parallel arrays (no
// object per entry); a cancelled message stays until it comes up and is skipped there.

export class DueHeap {
  private due: number[] = [];
  private ids: string[] = [];

  get size(): number {
    return this.due.length;
  }

  /** The earliest due time, or Infinity when empty. */
  peek(): number {
    return this.due.length === 0 ? Infinity : this.due[0];
  }

  push(dueAt: number, id: string): void {
    const due = this.due;
    const ids = this.ids;
    let i = due.length;
    due.push(dueAt);
    ids.push(id);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (due[parent] <= dueAt) break;
      due[i] = due[parent];
      ids[i] = ids[parent];
      i = parent;
    }
    due[i] = dueAt;
    ids[i] = id;
  }

  /** Removes and answers the id of the earliest entry (undefined when empty). */
  pop(): string | undefined {
    const due = this.due;
    const ids = this.ids;
    if (due.length === 0) return undefined;
    const top = ids[0];
    const lastDue = due.pop()!;
    const lastId = ids.pop()!;
    const n = due.length;
    if (n > 0) {
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        if (l >= n) break;
        const r = l + 1;
        const c = r < n && due[r] < due[l] ? r : l;
        if (due[c] >= lastDue) break;
        due[i] = due[c];
        ids[i] = ids[c];
        i = c;
      }
      due[i] = lastDue;
      ids[i] = lastId;
    }
    return top;
  }

  clear(): void {
    this.due = [];
    this.ids = [];
  }
}
