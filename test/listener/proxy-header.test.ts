// The PROXY protocol header of the Node transport (mqtt.io node): the same fixtures, malformed
// table and trust rule as the native driver's (native/core/tests/net_proxy.rs), random inputs,
// a header cut anywhere; and readProxyHeader over loopback sockets: what follows the header is
// kept for the connection, a stranger, a timeout and a close in the middle are refused, a silent
// health check is not counted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { once } from 'node:events';

import { certificateVerified, decide, parseProxyHeader, TrustedSources, V2_MAX, type ProxyErrorReason, type ProxyHeader } from '../../src/listener/proxy-header.ts';
import { proxyOrigin, readProxyHeader } from '../../src/listener/proxy-socket.ts';
import { parseCidr, trustedProblem } from '../../src/broker/proxy-protocol.ts';

const SIG = Buffer.from('0d0a0d0a000d0a515549540a', 'hex');

function v2(verCmd: number, fam: number, body: Buffer): Buffer {
  const h = Buffer.alloc(16);
  SIG.copy(h);
  h[12] = verCmd;
  h[13] = fam;
  h.writeUInt16BE(body.length, 14);
  return Buffer.concat([h, body]);
}

/** AF_INET addresses: 10.1.2.3:4444 -> 10.9.9.9:1883. */
const INET = Buffer.from([10, 1, 2, 3, 10, 9, 9, 9, 0x11, 0x5c, 0x07, 0x5b]);

function tlv(type: number, value: Buffer | string): Buffer {
  const v = Buffer.from(value);
  const t = Buffer.alloc(3);
  t[0] = type;
  t.writeUInt16BE(v.length, 1);
  return Buffer.concat([t, v]);
}

function ssl(client: number, verify: number, subs: Buffer): Buffer {
  const v = Buffer.alloc(5);
  v[0] = client;
  v.writeUInt32BE(verify, 1);
  return tlv(0x20, Buffer.concat([v, subs]));
}

function header(bytes: Buffer): { header: ProxyHeader; length: number } {
  const p = parseProxyHeader(bytes);
  assert.equal(p.kind, 'header', JSON.stringify(p));
  const { header: h, length } = p as { kind: 'header'; header: ProxyHeader; length: number };
  return { header: h, length };
}

test('v1 fixtures', () => {
  const cases: [string, ProxyHeader][] = [
    ['PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\n', { version: 1, source: { address: '192.168.0.1', port: 56324 } }],
    // Written as Node writes a peer's address.
    ['PROXY TCP6 2001:DB8:0:0::1 ::1 65535 0\r\n', { version: 1, source: { address: '2001:db8::1', port: 65535 } }],
    ['PROXY UNKNOWN\r\n', { version: 1 }],
    ['PROXY UNKNOWN ffff:f...f:ffff ffff:f...f:ffff 65535 65535\r\n', { version: 1 }],
  ];
  for (const [line, want] of cases) {
    const got = header(Buffer.concat([Buffer.from(line), Buffer.from([0x10, 0x0c])]));
    assert.deepEqual(got, { header: want, length: line.length }, line);
  }
  const longest = Buffer.from(`PROXY UNKNOWN ${'x'.repeat(91)}\r\n`);
  assert.equal(longest.length, 107);
  assert.equal(header(longest).length, 107);
});

test('v2 fixtures', () => {
  assert.deepEqual(header(v2(0x21, 0x11, INET)), { header: { version: 2, source: { address: '10.1.2.3', port: 4444 } }, length: 28 });
  // AF_INET6: an IPv4-mapped source, as Node writes it.
  const b6 = Buffer.alloc(36);
  Buffer.from('00000000000000000000ffff0a010203', 'hex').copy(b6, 0);
  b6.writeUInt16BE(50000, 32);
  assert.deepEqual(header(v2(0x21, 0x21, b6)).header.source, { address: '::ffff:10.1.2.3', port: 50000 });
  // LOCAL, UNSPEC, UNIX: no client.
  assert.deepEqual(header(v2(0x20, 0x11, INET)), { header: { version: 2 }, length: 28 });
  assert.deepEqual(header(v2(0x21, 0x00, Buffer.from([1, 2, 3]))), { header: { version: 2 }, length: 19 });
  assert.deepEqual(header(v2(0x21, 0x31, Buffer.alloc(216))), { header: { version: 2 }, length: 232 });
  // TLVs: ALPN (skipped), AUTHORITY, NOOP (skipped), SSL (client 0x07, verify 0, VERSION, CN, CIPHER skipped).
  const body = Buffer.concat([INET, tlv(0x01, 'mqtt'), tlv(0x02, 'broker.example'), tlv(0x04, Buffer.alloc(3)), ssl(0x07, 0, Buffer.concat([tlv(0x21, 'TLSv1.3'), tlv(0x22, 'device-7'), tlv(0x23, 'TLS_AES_256_GCM_SHA384')]))]);
  const h = header(v2(0x21, 0x11, body)).header;
  assert.equal(h.authority, 'broker.example');
  assert.deepEqual(h.ssl, { client: 7, verify: 0, version: 'TLSv1.3', cn: 'device-7' });
  assert.equal(certificateVerified(h), true);
  assert.deepEqual(proxyOrigin(h, '10.0.0.5', 40000), { address: '10.0.0.5', port: 40000, version: 2, serverName: 'broker.example', ssl: true, certificateCN: 'device-7', certificateVerified: true });
  // LOCAL says nothing of the client: no origin.
  assert.equal(proxyOrigin(header(v2(0x20, 0x00, Buffer.alloc(0))).header, '10.0.0.5', 1), undefined);
});

test('a certificate counts as verified only when the balancer says so', () => {
  const v = (client: number, verify: number) => certificateVerified({ version: 2, ssl: { client, verify, cn: 'c' } });
  assert.equal(v(0x03, 0), true);
  assert.equal(v(0x05, 0), true);
  assert.equal(v(0x01, 0), false);
  assert.equal(v(0x03, 1), false);
  assert.equal(v(0x02, 0), false);
});

test('TLV values that are not text are not given', () => {
  const h = header(v2(0x21, 0x11, Buffer.concat([INET, tlv(0x02, Buffer.from([0xff, 0xfe])), ssl(0x03, 0, tlv(0x22, 'dev\nice'))]))).header;
  assert.equal(h.authority, undefined);
  assert.equal(h.ssl?.cn, undefined);
});

test('not a header, and prefixes that need more', () => {
  for (const b of ['100c00044d515454', '160301', Buffer.from('GET / HTTP/1.1\r\n').toString('hex'), Buffer.from('PROXZ').toString('hex'), '0d0a0d0a000d0a5155495858']) {
    assert.equal(parseProxyHeader(Buffer.from(b, 'hex')).kind, 'not-proxy', b);
  }
  for (const b of [Buffer.alloc(0), Buffer.from('P'), Buffer.from('PROXY'), SIG, Buffer.concat([SIG, Buffer.from([0x21, 0x11, 0])])]) {
    assert.equal(parseProxyHeader(b).kind, 'need-more', b.toString('hex'));
  }
});

test('the malformed table (as the native driver\'s)', () => {
  const line = (s: string) => Buffer.from(s, 'latin1');
  const cases: [string, Buffer, ProxyErrorReason][] = [
    ['v1: line over 107 bytes', line(`PROXY UNKNOWN ${'x'.repeat(92)}\r\n`), 'malformed'],
    ['v1: no CRLF within 107 bytes', line(`PROXY TCP4 ${'1'.repeat(109)}`), 'malformed'],
    ['v1: CR without LF', line('PROXY TCP4 1.2.3.4 5.6.7.8 1 2\rX'), 'malformed'],
    ['v1: unknown protocol', line('PROXY UDP4 1.2.3.4 5.6.7.8 1 2\r\n'), 'malformed'],
    ['v1: missing port', line('PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n'), 'malformed'],
    ['v1: two spaces', line('PROXY TCP4  1.2.3.4 5.6.7.8 1 2\r\n'), 'malformed'],
    ['v1: IPv6 under TCP4', line('PROXY TCP4 ::1 ::1 1 2\r\n'), 'malformed'],
    ['v1: IPv4 under TCP6', line('PROXY TCP6 1.2.3.4 5.6.7.8 1 2\r\n'), 'malformed'],
    ['v1: octet over 255', line('PROXY TCP4 1.2.3.256 5.6.7.8 1 2\r\n'), 'malformed'],
    ['v1: port over 65535', line('PROXY TCP4 1.2.3.4 5.6.7.8 65536 2\r\n'), 'malformed'],
    ['v1: port with a leading zero', line('PROXY TCP4 1.2.3.4 5.6.7.8 0443 2\r\n'), 'malformed'],
    ['v1: signed port', line('PROXY TCP4 1.2.3.4 5.6.7.8 +1 2\r\n'), 'malformed'],
    ['v1: not ASCII', Buffer.concat([line('PROXY TCP4 '), Buffer.from([0xff]), line(' 5.6.7.8 1 2\r\n')]), 'malformed'],
    ['v2: version 1 in the high nibble', v2(0x11, 0x11, INET), 'malformed'],
    ['v2: command 2', v2(0x22, 0x11, INET), 'malformed'],
    ['v2: AF_INET over DGRAM', v2(0x21, 0x12, INET), 'malformed'],
    ['v2: AF_INET, transport unspecified', v2(0x21, 0x10, INET), 'malformed'],
    ['v2: family 4', v2(0x21, 0x41, INET), 'malformed'],
    ['v2: AF_INET, 11 address bytes', v2(0x21, 0x11, INET.subarray(0, 11)), 'malformed'],
    ['v2: AF_INET6, 12 address bytes', v2(0x21, 0x21, INET), 'malformed'],
    ['v2: a TLV cut in its header', v2(0x21, 0x11, Buffer.concat([INET, Buffer.from([0x02, 0x00])])), 'malformed'],
    ['v2: a TLV longer than the header', v2(0x21, 0x11, Buffer.concat([INET, Buffer.from([0x02, 0x00, 0x09, 0x61])])), 'malformed'],
    ['v2: SSL TLV under 5 bytes', v2(0x21, 0x11, Buffer.concat([INET, tlv(0x20, Buffer.from([1, 0, 0]))])), 'malformed'],
    ['v2: SSL sub-TLV past its TLV', v2(0x21, 0x11, Buffer.concat([INET, tlv(0x20, Buffer.from([1, 0, 0, 0, 0, 0x22, 0, 5, 0x78]))])), 'malformed'],
    ['v2: longer than 4096 bytes', v2(0x21, 0x11, Buffer.alloc(V2_MAX - 15)), 'too_large'],
  ];
  for (const [what, bytes, reason] of cases) assert.deepEqual(parseProxyHeader(bytes), { kind: 'invalid', reason }, what);
  const longest = v2(0x21, 0x11, Buffer.concat([INET, tlv(0x04, Buffer.alloc(V2_MAX - 16 - 12 - 3))]));
  assert.equal(longest.length, V2_MAX);
  assert.equal(header(longest).length, V2_MAX);
});

test('random bytes never throw; a header cut anywhere needs more; what follows is never taken', () => {
  let seed = 7;
  const rand = (n: number) => {
    seed = (seed * 1103515245 + 12345) >>> 0;
    return seed % n;
  };
  const bytes = (n: number) => Buffer.from(Array.from({ length: n }, () => rand(256)));
  for (let i = 0; i < 3000; i++) {
    const junk = bytes(rand(200));
    parseProxyHeader(junk);
    parseProxyHeader(Buffer.concat([SIG, junk]));
    parseProxyHeader(Buffer.concat([Buffer.from('PROXY '), junk]));
    const tlvs = Array.from({ length: rand(5) }, () => tlv([0x01, 0x02, 0x04, 0x05, 0x30][rand(5)], bytes(rand(30))));
    const good = [
      Buffer.from(`PROXY TCP4 ${rand(256)}.${rand(256)}.${rand(256)}.${rand(256)} 1.2.3.4 ${rand(65536)} ${rand(65536)}\r\n`),
      v2(0x21, 0x11, Buffer.concat([bytes(12), ...tlvs])),
      v2(0x20, 0x00, bytes(rand(50))),
    ][rand(3)];
    const cut = rand(good.length);
    assert.equal(parseProxyHeader(good.subarray(0, cut)).kind, 'need-more', `${good.toString('hex')} cut at ${cut}`);
    const whole = parseProxyHeader(Buffer.concat([good, bytes(rand(50))]));
    assert.equal(whole.kind === 'header' ? whole.length : whole.kind, good.length);
    const changed = Buffer.from(good);
    changed[rand(changed.length)] = rand(256);
    parseProxyHeader(changed);
  }
});

test('the trust rule', () => {
  const hdr = Buffer.from('PROXY TCP4 10.1.2.3 10.0.0.1 5 6\r\n\x10');
  for (const mode of ['optional', 'required'] as const) {
    assert.deepEqual(decide(mode, true, hdr), { kind: 'open', header: { version: 1, source: { address: '10.1.2.3', port: 5 } }, length: 34 });
    assert.deepEqual(decide(mode, false, hdr), { kind: 'refuse', reason: 'untrusted' });
    assert.deepEqual(decide(mode, false, Buffer.from('PROXY bogus\r\n')), { kind: 'refuse', reason: 'untrusted' });
    assert.deepEqual(decide(mode, true, Buffer.from('PROXY bogus\r\n')), { kind: 'refuse', reason: 'malformed' });
    assert.deepEqual(decide(mode, true, Buffer.from('PROX')), { kind: 'wait' });
  }
  const mqtt = Buffer.from([0x10, 0x0c]);
  assert.deepEqual(decide('optional', true, mqtt), { kind: 'open', header: null, length: 0 });
  assert.deepEqual(decide('optional', false, mqtt), { kind: 'open', header: null, length: 0 });
  assert.deepEqual(decide('required', true, mqtt), { kind: 'refuse', reason: 'missing' });
});

test('trusted blocks: addresses and CIDR blocks, IPv4 ones covering mapped peers', () => {
  const t = new TrustedSources(['10.0.0.0/8', '127.0.0.1', 'fd00::/8']);
  assert.equal(t.has('10.200.1.2'), true);
  assert.equal(t.has('::ffff:10.1.2.3'), true);
  assert.equal(t.has('11.0.0.1'), false);
  assert.equal(t.has('127.0.0.1'), true);
  assert.equal(t.has('127.0.0.2'), false);
  assert.equal(t.has('fd12::1'), true);
  assert.equal(t.has('fe80::1'), false);
  for (const bad of ['10.0.0.0/33', '::/129', '10.0.0/8', 'x', '10.0.0.0/', '10.0.0.0/-1', '10.0.0.0/+8', 'fe80::1%eth0']) assert.equal(parseCidr(bad), null, bad);
  assert.deepEqual(trustedProblem(['10.0.0.0/8', 'nope']), { index: 1, message: 'not an IP address or CIDR block (a.b.c.d/n, x:y::z/n): "nope"' });
  assert.equal(trustedProblem(Array.from({ length: 257 }, () => '10.0.0.1'))?.message, 'at most 256 blocks');
});

// ---------------------------------------------------------------------------------------------
// readProxyHeader over loopback

interface Outcome {
  header?: ProxyHeader | null;
  refused?: ProxyErrorReason;
  rest?: Buffer;
}

/** A server that reads each connection's header with `policy` and reports the first outcome. */
async function serve(mode: 'optional' | 'required', trusted: string[], timeoutMs = 5000): Promise<{ port: number; next(): Promise<Outcome>; close(): void }> {
  const outcomes: Outcome[] = [];
  const waiters: ((o: Outcome) => void)[] = [];
  const report = (o: Outcome) => (waiters.length ? waiters.shift()!(o) : outcomes.push(o));
  const server = net.createServer((socket) => {
    readProxyHeader(socket, { mode, trusted: new TrustedSources(trusted), timeoutMs }, (header) => {
      // What followed the header is kept in the paused socket.
      socket.once('data', (rest: Buffer) => report({ header, rest }));
      socket.resume();
    }, (refused) => report({ refused }));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    port: (server.address() as net.AddressInfo).port,
    next: () => (outcomes.length ? Promise.resolve(outcomes.shift()!) : new Promise((r) => waiters.push(r))),
    close: () => server.close(),
  };
}

function send(port: number, from: string, chunks: (Buffer | 'end')[]): net.Socket {
  const s = net.connect({ port, host: '127.0.0.1', localAddress: from });
  s.on('error', () => {});
  s.on('connect', async () => {
    for (const c of chunks) {
      if (c === 'end') s.end();
      else {
        s.write(c);
        await new Promise((r) => setImmediate(r));
      }
    }
  });
  return s;
}

test('readProxyHeader: the header byte by byte, what follows kept for the connection', async () => {
  const srv = await serve('required', ['127.0.0.1']);
  try {
    const hdr = v2(0x21, 0x11, Buffer.concat([INET, tlv(0x02, 'sni.example')]));
    const s = send(srv.port, '127.0.0.1', [...[...hdr].map((b) => Buffer.from([b])), Buffer.from('mqtt bytes')]);
    const o = await srv.next();
    assert.deepEqual(o.header, { version: 2, source: { address: '10.1.2.3', port: 4444 }, authority: 'sni.example' });
    assert.equal(o.rest?.toString(), 'mqtt bytes');
    s.destroy();
    // In one segment with the data.
    const s2 = send(srv.port, '127.0.0.1', [Buffer.concat([Buffer.from('PROXY TCP4 10.1.2.3 10.0.0.1 1 2\r\n'), Buffer.from('after')])]);
    const o2 = await srv.next();
    assert.equal(o2.rest?.toString(), 'after');
    s2.destroy();
  } finally {
    srv.close();
  }
});

test('readProxyHeader: refusals and their reasons; a silent close is not one', async () => {
  const srv = await serve('required', ['127.0.0.1'], 300);
  try {
    const cases: [string, (Buffer | 'end')[], ProxyErrorReason][] = [
      ['127.0.0.1', [Buffer.from([0x10, 0x0c, 0, 4])], 'missing'],
      ['127.0.0.2', [], 'untrusted'],
      ['127.0.0.1', [Buffer.from('PROXY TCP4 1.2.3\r\n')], 'malformed'],
      ['127.0.0.1', [Buffer.concat([SIG, Buffer.from([0x21, 0x11, 0xff, 0xff])])], 'too_large'],
      ['127.0.0.1', [Buffer.from('PROXY TCP4 1'), 'end'], 'closed'],
      ['127.0.0.1', [Buffer.from('PROXY TCP4 1')], 'timeout'],
    ];
    for (const [from, chunks, reason] of cases) {
      const s = send(srv.port, from, chunks);
      assert.deepEqual(await srv.next(), { refused: reason }, `${from} ${JSON.stringify(chunks)}`);
      await once(s, 'close');
    }
    // Connects and closes without a byte (a health check), then a good one: only the good one is reported.
    send(srv.port, '127.0.0.1', ['end']);
    const s = send(srv.port, '127.0.0.1', [Buffer.from('PROXY UNKNOWN\r\nx')]);
    assert.deepEqual(await srv.next(), { header: { version: 1 }, rest: Buffer.from('x') });
    s.destroy();
  } finally {
    srv.close();
  }
});

test("readProxyHeader 'optional': a direct client's bytes untouched, a stranger's header refused", async () => {
  const srv = await serve('optional', ['127.0.0.1']);
  try {
    const s = send(srv.port, '127.0.0.2', [Buffer.from([0x10, 0x0c, 0x00, 0x04])]);
    assert.deepEqual(await srv.next(), { header: null, rest: Buffer.from([0x10, 0x0c, 0x00, 0x04]) });
    s.destroy();
    send(srv.port, '127.0.0.2', [v2(0x21, 0x11, INET)]);
    assert.deepEqual(await srv.next(), { refused: 'untrusted' });
  } finally {
    srv.close();
  }
});
