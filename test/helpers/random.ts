// Seeded randomness for reproducible randomized tests: a failure prints its seed.
export class Rng {
  private s: number;
  constructor(readonly seed: number) {
    this.s = seed >>> 0 || 0x9e3779b9;
  }
  /** xorshift32 */
  next(): number {
    let x = this.s;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.s = x >>> 0;
    return this.s;
  }
  int(n: number): number {
    return this.next() % n;
  }
  bool(p = 0.5): boolean {
    return this.next() / 0x100000000 < p;
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)];
  }
  bytes(n: number): Buffer {
    const b = Buffer.alloc(n);
    for (let i = 0; i < n; i++) b[i] = this.int(256);
    return b;
  }
  /** Printable ASCII plus a few multi-byte characters; never U+0000, '+', '#' or '/'. */
  word(min = 1, max = 8): string {
    const alphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.é€😀';
    const chars = [...alphabet];
    let s = '';
    const n = min + this.int(max - min + 1);
    for (let i = 0; i < n; i++) s += this.pick(chars);
    return s;
  }
  topic(levels = 1 + this.int(5)): string {
    return Array.from({ length: levels }, () => this.word(1, 6)).join('/');
  }
}

export function seeds(count: number, base = Number(process.env.SEED ?? 0x5eed)): number[] {
  return Array.from({ length: count }, (_, i) => (base + i * 7919) >>> 0);
}
