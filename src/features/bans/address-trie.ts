// Addresses and CIDR blocks, IPv4 and IPv6, in one binary prefix trie (one bit per level, 128
// levels: an IPv4 address is its IPv4-mapped IPv6 form ::ffff:a.b.c.d, so a v4 block and the
// mapped addresses of a dual-stack socket meet the same entries). Nodes live in flat typed arrays
// (two child indexes and an expiry per node): no object per node, and a lookup walks at most 128
// nodes without allocating. A block's entry is its expiry (ms since the epoch, Infinity for none)
// at the node of its last prefix bit; a lookup answers whether any block on the address's path
// has not expired. Owned by whoever builds it (one per worker, one in the main thread).
import { isIPv4, isIPv6 } from 'node:net';

/** An address or block, parsed: 16 bytes (IPv4 mapped) and the prefix length over 128 bits. */
export interface Block {
  bytes: Uint8Array;
  prefix: number;
}

const MAPPED = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];

/** The 16 bytes of an IPv4 or IPv6 address (IPv4 as ::ffff:a.b.c.d), or null when it is none. A
 * zone (`fe80::1%eth0`) is dropped. */
export function parseAddress(text: string): Uint8Array | null {
  const pct = text.indexOf('%');
  const a = pct >= 0 ? text.slice(0, pct) : text;
  if (isIPv4(a)) {
    const out = new Uint8Array(16);
    out.set(MAPPED);
    const parts = a.split('.');
    for (let i = 0; i < 4; i++) out[12 + i] = Number(parts[i]);
    return out;
  }
  if (!isIPv6(a)) return null;
  return parseIPv6(a);
}

function parseIPv6(a: string): Uint8Array {
  const out = new Uint8Array(16);
  const groups: number[] = [];
  const tail: number[] = [];
  const dbl = a.indexOf('::');
  const head = dbl >= 0 ? a.slice(0, dbl) : a;
  const rest = dbl >= 0 ? a.slice(dbl + 2) : '';
  const words = (s: string, into: number[]): void => {
    if (s === '') return;
    for (const part of s.split(':')) {
      if (part.includes('.')) {
        const q = part.split('.').map(Number);
        into.push((q[0] << 8) | q[1], (q[2] << 8) | q[3]);
      } else into.push(parseInt(part, 16));
    }
  };
  words(head, groups);
  words(rest, tail);
  const all = dbl >= 0 ? [...groups, ...new Array<number>(8 - groups.length - tail.length).fill(0), ...tail] : groups;
  for (let i = 0; i < 8; i++) {
    out[i * 2] = all[i] >> 8;
    out[i * 2 + 1] = all[i] & 0xff;
  }
  return out;
}

/** Writes the 16 bytes of `text` into `out` (IPv4 dotted quads parsed here, without allocating:
 * the per-CONNECT path); answers false when it is no address. */
export function parseAddressInto(text: string, out: Uint8Array): boolean {
  let part = 0, value = 0, digits = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 48 && c <= 57) {
      // No leading zeros (isIPv4 refuses them too): such text takes the slow path.
      if ((digits === 1 && value === 0) || ++digits > 3 || (value = value * 10 + (c - 48)) > 255) return slow(text, out);
    } else if (c === 46 && digits > 0 && part < 3) {
      out[12 + part++] = value;
      value = 0;
      digits = 0;
    } else return slow(text, out);
  }
  if (part !== 3 || digits === 0) return slow(text, out);
  out[15] = value;
  for (let i = 0; i < 12; i++) out[i] = MAPPED[i];
  return true;
}

function slow(text: string, out: Uint8Array): boolean {
  const bytes = parseAddress(text);
  if (bytes === null) return false;
  out.set(bytes);
  return true;
}

/** An address (`10.0.0.1`, `2001:db8::1`) or a CIDR block (`10.0.0.0/8`, `2001:db8::/32`), or
 * why it is none. An IPv4 block's prefix counts over its mapped form (+96). Bits past the prefix
 * must be zero (`10.0.0.1/8` is refused: it is ambiguous). */
export function parseBlock(text: string): Block | string {
  const slash = text.indexOf('/');
  const addr = slash >= 0 ? text.slice(0, slash) : text;
  const bytes = parseAddress(addr);
  if (bytes === null || addr.includes('%')) return `${addr} is not an IPv4 or IPv6 address`;
  const v4 = isIPv4(addr);
  const max = v4 ? 32 : 128;
  let prefix = max;
  if (slash >= 0) {
    const p = text.slice(slash + 1);
    if (!/^\d{1,3}$/.test(p) || Number(p) > max) return `/${p} is not a prefix length of an ${v4 ? 'IPv4' : 'IPv6'} block (0 to ${max})`;
    prefix = Number(p);
  }
  const bits = v4 ? prefix + 96 : prefix;
  for (let i = bits; i < 128; i++) {
    if ((bytes[i >> 3] >> (7 - (i & 7))) & 1) return `${text} has bits set past its prefix length (the block is ${canonical({ bytes: masked(bytes, bits), prefix: bits })})`;
  }
  return { bytes, prefix: bits };
}

function masked(bytes: Uint8Array, bits: number): Uint8Array {
  const out = new Uint8Array(bytes);
  for (let i = bits; i < 128; i++) out[i >> 3] &= ~(1 << (7 - (i & 7)));
  return out;
}

/** A block's text as the API shows it: IPv4-mapped ones in IPv4 form, a full-length one without
 * its prefix. */
export function canonical(b: Block): string {
  const v4 = b.prefix >= 96 && MAPPED.every((v, i) => b.bytes[i] === v);
  if (v4) {
    const a = `${b.bytes[12]}.${b.bytes[13]}.${b.bytes[14]}.${b.bytes[15]}`;
    return b.prefix === 128 ? a : `${a}/${b.prefix - 96}`;
  }
  const words: string[] = [];
  for (let i = 0; i < 8; i++) words.push(((b.bytes[i * 2] << 8) | b.bytes[i * 2 + 1]).toString(16));
  // The longest run of zero words becomes '::' (RFC 5952).
  let best = -1, bestLen = 1;
  for (let i = 0; i < 8;) {
    if (words[i] !== '0') { i++; continue; }
    let j = i;
    while (j < 8 && words[j] === '0') j++;
    if (j - i > bestLen) { best = i; bestLen = j - i; }
    i = j;
  }
  const text = best < 0 ? words.join(':') : `${words.slice(0, best).join(':')}::${words.slice(best + bestLen).join(':')}`;
  return b.prefix === 128 ? text : `${text}/${b.prefix}`;
}

const MAPPED_BLOCK: Block = { bytes: new Uint8Array([...MAPPED, 0, 0, 0, 0]), prefix: 96 };

function isMapped(a: Uint8Array): boolean {
  for (let i = 0; i < 12; i++) if (a[i] !== MAPPED[i]) return false;
  return true;
}

const NONE = 0; // child index 0 is "no child" (the root is node 0, nobody's child)

export class AddressTrie {
  private zero = new Int32Array(1024);
  private one = new Int32Array(1024);
  /** Per node: the expiry of a block ending here; 0: none. */
  private until = new Float64Array(1024);
  private nodes = 1;
  /** Blocks held (a block set twice counts once). */
  private count = 0;
  /** Blocks of 96 bits or fewer: the only ones an IPv4 address meets above the ::ffff:0:0/96
   * node. With none, an IPv4 lookup starts at that node (32 steps, not 128). */
  private short = 0;
  /** The node of ::ffff:0:0/96 (-1: none; -2: not looked up since the trie grew). */
  private mappedNode = -2;

  get size(): number {
    return this.count;
  }

  /** Nodes allocated (removed blocks leave theirs until clear()). */
  get nodeCount(): number {
    return this.nodes;
  }

  /** Sets the block's expiry (Infinity: none); a block set again takes the new expiry. */
  set(b: Block, until: number): void {
    let n = 0;
    for (let i = 0; i < b.prefix; i++) {
      const bit = (b.bytes[i >> 3] >> (7 - (i & 7))) & 1;
      const arr = bit ? this.one : this.zero;
      let next = arr[n];
      if (next === NONE) {
        next = this.grow();
        (bit ? this.one : this.zero)[n] = next;
      }
      n = next;
    }
    if (this.until[n] === 0) {
      this.count++;
      if (b.prefix <= 96) this.short++;
    }
    this.until[n] = until;
    if (this.mappedNode === -1) this.mappedNode = -2;
  }

  /** Removes the block; answers whether it was held. */
  delete(b: Block): boolean {
    const n = this.find(b);
    if (n < 0 || this.until[n] === 0) return false;
    this.until[n] = 0;
    this.count--;
    if (b.prefix <= 96) this.short--;
    return true;
  }

  /** The expiry of exactly this block, or 0 when it is not held. */
  get(b: Block): number {
    const n = this.find(b);
    return n < 0 ? 0 : this.until[n];
  }

  /** Whether a block holding `address` (16 bytes) has an expiry after `now`. */
  covers(address: Uint8Array, now: number): boolean {
    const until = this.until;
    let n = 0;
    let i = 0;
    if (this.short === 0 && isMapped(address)) {
      if (this.mappedNode === -2) this.mappedNode = this.find(MAPPED_BLOCK);
      if (this.mappedNode < 0) return false;
      n = this.mappedNode;
      i = 96;
    }
    for (; ; i++) {
      if (until[n] > now) return true;
      if (i === 128) return false;
      n = ((address[i >> 3] >> (7 - (i & 7))) & 1 ? this.one : this.zero)[n];
      if (n === NONE) return false;
    }
  }

  clear(): void {
    this.zero = new Int32Array(1024);
    this.one = new Int32Array(1024);
    this.until = new Float64Array(1024);
    this.nodes = 1;
    this.count = 0;
    this.short = 0;
    this.mappedNode = -2;
  }

  private find(b: Block): number {
    let n = 0;
    for (let i = 0; i < b.prefix; i++) {
      n = ((b.bytes[i >> 3] >> (7 - (i & 7))) & 1 ? this.one : this.zero)[n];
      if (n === NONE) return -1;
    }
    return n;
  }

  private grow(): number {
    if (this.nodes === this.zero.length) {
      const size = this.zero.length * 2;
      const zero = new Int32Array(size); zero.set(this.zero); this.zero = zero;
      const one = new Int32Array(size); one.set(this.one); this.one = one;
      const until = new Float64Array(size); until.set(this.until); this.until = until;
    }
    return this.nodes++;
  }
}
