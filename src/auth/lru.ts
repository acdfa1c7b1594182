// Owns a bounded least-recently-used map: at most `capacity` entries, the least recently read or
// written one evicted first. Capacity 0 keeps nothing.

export class LruMap<K, V> {
  readonly capacity: number;
  /** Made on the first write: a connection that is never asked about costs no Map. */
  private map: Map<K, V> | null = null;

  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 0) {
      throw new RangeError(`LruMap capacity must be a non-negative integer (got ${capacity})`);
    }
    this.capacity = capacity;
  }

  get size(): number {
    return this.map?.size ?? 0;
  }

  /** The value for `key`, marking it most recently used; undefined when absent. */
  get(key: K): V | undefined {
    if (this.map === null) return undefined;
    const value = this.map.get(key);
    if (value === undefined) return undefined;
    this.map.delete(key);
    this.map.set(key, value);
    return value;
  }

  set(key: K, value: V): void {
    if (this.capacity === 0) return;
    const map = (this.map ??= new Map());
    map.delete(key);
    map.set(key, value);
    if (map.size > this.capacity) map.delete(map.keys().next().value as K);
  }

  delete(key: K): void {
    this.map?.delete(key);
  }

  clear(): void {
    this.map?.clear();
  }
}
