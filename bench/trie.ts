// Trie benchmark: 1 M subscriptions (exact, '+' and '#' filters over 5-level topics). For each
// matcher, in its own child process so memory figures do not mix: insert rate, match p50/p99 on
// cache misses (every topic new to the matcher), and bytes per subscription. Spindle's native
// trie (through N-API, cache off) against qlobber (Aedes' matcher) and a plain TypeScript trie,
// on the same data in the same run. Targets (issue 2): p99 < 2 µs and < 200 bytes/subscription.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import qlobber from 'qlobber';
const { Qlobber } = qlobber;

import { Router, NO_PUBLISHER } from '../src/native/index.ts';
import { Rng } from '../test/helpers/random.ts';
import { writeResults, type Row } from './lib/report.ts';

const SUBS = Number(process.env.TRIE_SUBS ?? 1_000_000);
const MATCHES = 200_000;
const FANOUT = [20, 50, 50, 50, 50]; // values per level: 20*50^4 = 125 M distinct topics

function topicAt(rng: Rng): string[] {
  return FANOUT.map((n, level) => `l${level}-${rng.int(n)}`);
}

/** The subscription mix: 70 % exact, 20 % one '+', 10 % '#' after 2-4 levels. */
function filters(count: number): string[] {
  const rng = new Rng(1);
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    const levels = topicAt(rng);
    const kind = rng.int(10);
    if (kind < 7) out.push(levels.join('/'));
    else if (kind < 9) { levels[rng.int(5)] = '+'; out.push(levels.join('/')); }
    else out.push([...levels.slice(0, 2 + rng.int(3)), '#'].join('/'));
  }
  return out;
}

/** Topics for matching: half drawn so that they hit subscriptions, half random (mostly '+'/'#' hits). */
function topics(count: number, subs: string[]): string[] {
  const rng = new Rng(2);
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    if (rng.bool()) {
      const f = subs[rng.int(subs.length)].split('/');
      const t = topicAt(rng);
      out.push(f.map((l, k) => (l === '+' ? t[k] : l)).filter((l) => l !== '#').concat(f.includes('#') ? t.slice(f.length - 1) : []).join('/'));
    } else {
      out.push(topicAt(rng).join('/'));
    }
  }
  return out;
}

interface Matcher {
  add(filter: string, id: number): void;
  count(topic: string): number;
  /** The matcher's own estimate of its memory (Spindle: `router.heapBytes`), when it has one. */
  heapBytes?(): number;
}

class TsTrieNode {
  children = new Map<string, TsTrieNode>();
  plus: TsTrieNode | undefined;
  hash: number[] | undefined;
  subs: number[] | undefined;
}
/** The plain TypeScript trie the native one is compared with. */
class TsTrie implements Matcher {
  root = new TsTrieNode();
  add(filter: string, id: number) {
    let node = this.root;
    for (const level of filter.split('/')) {
      if (level === '#') { (node.hash ??= []).push(id); return; }
      if (level === '+') node = node.plus ??= new TsTrieNode();
      else { let next = node.children.get(level); if (!next) node.children.set(level, next = new TsTrieNode()); node = next; }
    }
    (node.subs ??= []).push(id);
  }
  count(topic: string) {
    const levels = topic.split('/');
    let n = 0;
    const walk = (node: TsTrieNode, i: number) => {
      if (node.hash) n += node.hash.length;
      if (i === levels.length) { if (node.subs) n += node.subs.length; return; }
      const next = node.children.get(levels[i]);
      if (next) walk(next, i + 1);
      if (node.plus) walk(node.plus, i + 1);
    };
    walk(this.root, 0);
    return n;
  }
}

function makeMatcher(impl: string): Matcher {
  if (impl === 'spindle') {
    const router = Router.open('bench', { cacheCapacity: 0 });
    const out = new Uint32Array(1 << 16);
    return {
      add: (f, id) => { router.subscribe(f, id, 0, 0); },
      heapBytes: () => router.heapBytes,
      count: (t) => { let n = 0; const w = Number(router.match(t, NO_PUBLISHER, 0, out)); for (let i = 0; i < w; i += 3 + out[i + 2]) n++; return n; },
    };
  }
  if (impl === 'qlobber') {
    const q = new Qlobber({ separator: '/', wildcard_one: '+', wildcard_some: '#', match_empty_levels: true });
    return { add: (f, id) => q.add(f, id), count: (t) => q.match(t).length };
  }
  return new TsTrie();
}

function child(impl: string): Row {
  const subs = filters(SUBS);
  const probe = topics(MATCHES, subs);
  const gc = (globalThis as { gc?: () => void }).gc!;
  gc(); gc();
  const before = process.memoryUsage();
  const m = makeMatcher(impl);
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < subs.length; i++) m.add(subs[i], i + 1);
  const insertSec = Number(process.hrtime.bigint() - t0) / 1e9;
  gc(); gc();
  const after = process.memoryUsage();
  // Native memory is outside the JS heap: count RSS growth for it, heap growth for JS matchers.
  const bytes = impl === 'spindle' ? after.rss - before.rss : after.heapUsed - before.heapUsed;
  const ownEstimate = m.heapBytes ? Math.round(m.heapBytes() / SUBS) : '';
  for (let i = 0; i < 20000; i++) m.count(probe[i]); // warm up the JIT, not a cache (cache is off)
  const lat = new Float64Array(MATCHES);
  let total = 0;
  for (let i = 0; i < MATCHES; i++) {
    const s = process.hrtime.bigint();
    total += m.count(probe[i]);
    lat[i] = Number(process.hrtime.bigint() - s);
  }
  lat.sort();
  // hrtime itself costs something: measure it and subtract, so figures are of the match alone.
  const empty = new Float64Array(20000);
  for (let i = 0; i < empty.length; i++) { const s = process.hrtime.bigint(); empty[i] = Number(process.hrtime.bigint() - s); }
  empty.sort();
  const clock = empty[empty.length >> 1];
  return {
    matcher: impl,
    subscriptions: SUBS,
    'insert /s': Math.round(SUBS / insertSec),
    'match p50 µs': Math.max(0, lat[Math.floor(MATCHES * 0.5)] - clock) / 1000,
    'match p99 µs': Math.max(0, lat[Math.floor(MATCHES * 0.99)] - clock) / 1000,
    'bytes/sub': Math.round(bytes / SUBS),
    'own estimate bytes/sub': ownEstimate,
    'deliveries checked': total,
    'deliveries/match': Math.round((total / MATCHES) * 10) / 10,
  };
}

const arg = process.argv.find((a) => a.startsWith('--impl='));
if (arg) {
  process.stdout.write(JSON.stringify(child(arg.slice(7))));
} else {
  const self = fileURLToPath(import.meta.url);
  const rows: Row[] = [];
  for (const impl of ['spindle', 'qlobber', 'typescript-trie']) {
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--expose-gc', '--max-old-space-size=8192', self, `--impl=${impl}`], { encoding: 'utf8', maxBuffer: 1 << 20 });
    rows.push(JSON.parse(out));
    console.error(`${impl}: done`);
  }
  const totals = new Set(rows.map((r) => r['deliveries checked']));
  if (totals.size !== 1) throw new Error(`matchers disagree on the deliveries: ${[...totals].join(', ')}`);
  writeResults('trie', `Topic trie: ${SUBS.toLocaleString('en-US')} subscriptions, 5-level topics`, rows, [
    'Each matcher runs in its own process on the same filters and topics (70 % exact, 20 % with one +, 10 % ending in # after 2-4 levels).',
    `match: ${MATCHES.toLocaleString('en-US')} topics, each timed alone with the clock's own cost subtracted; Spindle through N-API with its match cache off, so every match is a miss.`,
    'bytes/sub: RSS growth for Spindle (native memory, allocator overhead included), JS heap growth for qlobber and the TypeScript trie.',
    "own estimate bytes/sub: Spindle's `router.heapBytes` (trie, edges, level table, per-session index; no allocator overhead) divided by the subscriptions.",
    'Targets: match p99 under 2 µs and under 200 bytes per subscription at 1 M subscriptions. All three matchers found the same number of deliveries.',
  ]);
}
