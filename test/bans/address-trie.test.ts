// The CIDR trie and its parser: IPv4 and IPv6 addresses and blocks, IPv4-mapped IPv6, nested
// blocks, expiry, removal, and the BanTable that uses it (checked against a linear scan).
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { AddressTrie, canonical, parseAddress, parseAddressInto, parseBlock, type Block } from '../../src/features/bans/address-trie.ts';
import { BanTable } from '../../src/features/bans/ban-table.ts';

function block(text: string): Block {
  const b = parseBlock(text);
  if (typeof b === 'string') throw new Error(b);
  return b;
}

test('addresses parse to 16 bytes, IPv4 as IPv4-mapped IPv6', () => {
  assert.deepEqual([...parseAddress('10.1.2.3')!], [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 10, 1, 2, 3]);
  assert.deepEqual(parseAddress('::ffff:10.1.2.3'), parseAddress('10.1.2.3'));
  assert.deepEqual(parseAddress('::ffff:a01:203'), parseAddress('10.1.2.3'));
  assert.deepEqual([...parseAddress('2001:db8::1')!], [0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
  assert.deepEqual(parseAddress('fe80::1%eth0'), parseAddress('fe80::1'));
  assert.deepEqual(parseAddress('::'), new Uint8Array(16));
  for (const bad of ['', '1.2.3', '256.1.1.1', '1.2.3.4.5', 'gggg::1', '1::2::3', 'example.com']) assert.equal(parseAddress(bad), null, bad);
});

test('blocks: prefix lengths, bits past the prefix refused, canonical text', () => {
  assert.equal(block('10.0.0.0/8').prefix, 104);
  assert.equal(block('10.0.0.1').prefix, 128);
  assert.equal(block('2001:db8::/32').prefix, 32);
  assert.match(parseBlock('10.0.0.1/8') as string, /past its prefix length \(the block is 10\.0\.0\.0\/8\)/);
  assert.match(parseBlock('10.0.0.0/33') as string, /not a prefix length/);
  assert.match(parseBlock('2001:db8::/129') as string, /not a prefix length/);
  assert.match(parseBlock('2001:db8::/x') as string, /not a prefix length/);
  assert.match(parseBlock('nope/8') as string, /not an IPv4 or IPv6 address/);
  assert.equal(canonical(block('::ffff:10.0.0.0/104')), '10.0.0.0/8');
  assert.equal(canonical(block('2001:0db8:0000:0000:0000:0000:0000:0001')), '2001:db8::1');
  assert.equal(canonical(block('2001:db8:0:1:0:0:0:0/64')), '2001:db8:0:1::/64');
  assert.equal(canonical(block('0:0:0:0:0:0:0:0/0')), '::/0');
  assert.equal(canonical(block('1:0:0:1:0:0:0:1')), '1:0:0:1::1', 'the longest run of zeros');
  assert.equal(canonical(block('1:0:0:1:0:0:1:1')), '1::1:0:0:1:1', 'the first of equal runs');
});

test('the trie: nested blocks, v4 and v6, expiry and removal', () => {
  const t = new AddressTrie();
  const now = 1_000_000;
  t.set(block('10.0.0.0/8'), Infinity);
  t.set(block('192.168.1.0/24'), now + 10);
  t.set(block('2001:db8::/32'), Infinity);
  t.set(block('203.0.113.7'), Infinity);
  assert.equal(t.size, 4);
  const has = (a: string, at = now) => t.covers(parseAddress(a)!, at);
  assert.ok(has('10.255.0.1'));
  assert.ok(has('::ffff:10.1.1.1'), 'an IPv4-mapped address meets the IPv4 block');
  assert.ok(!has('11.0.0.1'));
  assert.ok(has('192.168.1.200'));
  assert.ok(!has('192.168.1.200', now + 10), 'expired at its until');
  assert.ok(!has('192.168.2.1'));
  assert.ok(has('2001:db8:ffff::1'));
  assert.ok(!has('2001:db9::1'));
  assert.ok(has('203.0.113.7'));
  assert.ok(!has('203.0.113.8'));
  assert.ok(!has('::1'));
  assert.ok(t.delete(block('10.0.0.0/8')));
  assert.ok(!t.delete(block('10.0.0.0/8')), 'removed once');
  assert.ok(!has('10.255.0.1'));
  t.set(block('10.1.0.0/16'), Infinity);
  assert.ok(has('10.1.2.3'));
  assert.equal(t.get(block('10.1.0.0/16')), Infinity);
  assert.equal(t.get(block('10.0.0.0/8')), 0);
  t.set(block('::/0'), Infinity);
  assert.ok(has('1.2.3.4') && has('fe80::1'), '::/0 holds every address');
  t.clear();
  assert.equal(t.size, 0);
  assert.ok(!has('10.1.2.3'));
});

test('BanTable agrees with a linear scan over random blocks and addresses', () => {
  let seed = 42;
  const rnd = (n: number) => {
    seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
    return seed % n;
  };
  const table = new BanTable();
  const blocks: { text: string; block: Block }[] = [];
  for (let i = 0; i < 2000; i++) {
    const v4 = rnd(2) === 0;
    const bytes = new Uint8Array(16);
    if (v4) {
      bytes.set([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 10, rnd(4), rnd(256), rnd(256)]);
    } else {
      bytes.set([0x20, 0x01, 0x0d, 0xb8, rnd(4), rnd(256)]);
      for (let j = 6; j < 16; j++) bytes[j] = rnd(256);
    }
    const prefix = v4 ? 96 + 8 + rnd(25) : 16 + rnd(113);
    for (let k = prefix; k < 128; k++) bytes[k >> 3] &= ~(1 << (7 - (k & 7)));
    const text = canonical({ bytes, prefix });
    if (!blocks.some((b) => b.text === text)) blocks.push({ text, block: block(text) });
  }
  table.add(blocks.map((b) => ({ as: b.block.prefix === 128 ? 'peerhost' as const : 'peerhost_net' as const, who: b.text, until: 0 })));
  // Remove a quarter (the trie is rebuilt past its removal threshold only; both must agree).
  const removed = blocks.filter((_, i) => i % 4 === 0);
  table.remove(removed.map((b) => ({ as: 'peerhost_net' as const, who: b.text })));
  const live = blocks.filter((_, i) => i % 4 !== 0);
  const inside = (addr: Uint8Array, b: Block) => {
    for (let k = 0; k < b.prefix; k++) if (((addr[k >> 3] ^ b.bytes[k >> 3]) >> (7 - (k & 7))) & 1) return false;
    return true;
  };
  for (let i = 0; i < 3000; i++) {
    const base = blocks[rnd(blocks.length)].block.bytes;
    const addr = new Uint8Array(base);
    addr[15] ^= rnd(256);
    addr[13] ^= rnd(2);
    const text = canonical({ bytes: addr, prefix: 128 });
    const expected = live.some((b) => inside(addr, b.block));
    assert.equal(table.check('c', undefined, text) === 'peerhost', expected, text);
  }
});

test('BanTable: client ids and usernames, expiry, removal', () => {
  const t = new BanTable();
  const now = Date.now();
  t.add([{ as: 'clientid', who: 'a', until: 0 }, { as: 'username', who: 'u', until: now + 1000 }]);
  assert.equal(t.check('a', undefined, '1.2.3.4'), 'clientid');
  assert.equal(t.check('b', 'u', '1.2.3.4'), 'username');
  assert.equal(t.check('b', 'u', '1.2.3.4', now + 1000), null, 'expired');
  assert.equal(t.check('b', undefined, { get remoteAddress(): string { throw new Error('the address is not read without address bans'); } }), null);
  t.remove([{ as: 'clientid', who: 'a' }]);
  assert.equal(t.check('a', undefined, '1.2.3.4'), null);
  assert.equal(t.size, 1);
});

test('IPv4 lookups start at the ::ffff:0:0/96 node while no block of 96 bits or fewer is held', () => {
  const t = new AddressTrie();
  const has = (a: string) => t.covers(parseAddress(a)!, 0);
  assert.ok(!has('10.0.0.1'), 'empty');
  t.set(block('2001:db8::1'), Infinity); // a v6 address: no mapped node yet
  assert.ok(!has('10.0.0.1'));
  t.set(block('10.0.0.0/8'), Infinity); // the mapped node appears after a lookup found none
  assert.ok(has('10.0.0.1'));
  assert.ok(!has('11.0.0.1'));
  assert.ok(has('2001:db8::1') && !has('2001:db8::2'));
  t.set(block('8000::/1'), Infinity); // a short v6 block that does not hold ::ffff:0:0/96
  assert.ok(has('10.0.0.1') && !has('11.0.0.1'));
  t.set(block('::ffff:0.0.0.0/96'), Infinity); // every IPv4 address, as a 96-bit block
  assert.ok(has('11.0.0.1'), 'a block of 96 bits holds every IPv4 address');
  assert.ok(t.delete(block('::ffff:0.0.0.0/96')));
  assert.ok(!has('11.0.0.1'));
  t.set(block('::/1'), Infinity); // short, and it holds ::ffff:0:0/96: the whole walk finds it
  assert.ok(has('11.0.0.1'));
  const buf = new Uint8Array(16);
  for (const [text, ok] of [['10.0.0.1', true], ['010.0.0.1', false], ['1.2.3', false], ['1.2.3.4.', false], ['256.0.0.1', false], ['::ffff:10.0.0.1', true]] as const) {
    assert.equal(parseAddressInto(text, buf), ok, text);
    if (ok) assert.deepEqual(buf, parseAddress(text));
  }
});
