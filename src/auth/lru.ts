// Owns a bounded least-recently-used map: at most `capacity` entries, the least recently read or
// written one evicted first. Capacity 0 keeps nothing.

export class LruMap<K, V> {
  readonly capacity: number;
  private readonly map = new Map<K, V>();

  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 0) {
      throw new RangeError(`LruMap capacity must be a non-negative integer (got ${capacity})`);
    }
    this.capacity = capacity;
  }

  get size(): number {
    return this.map.size;
  }

  /** The value for `key`, marking it most recently used; undefined when absent. */
  get(key: K): V | undefined {
    const value = this.map.get(key);
    if (value === undefined) return undefined;
    this.map.delete(key);
    this.map.set(key, value);
    return value;
  }

  set(key: K, value: V): void {
    if (this.capacity === 0) return;
    this.map.delete(key);
    this.map.set(key, value);
    if (this.map.size > this.capacity) this.map.delete(this.map.keys().next().value as K);
  }

  delete(key: K): void {
    this.map.delete(key);
  }

  clear(): void {
    this.map.clear();
  }
}
