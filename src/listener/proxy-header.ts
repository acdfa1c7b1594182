// The PROXY protocol header (HAProxy's, v1 and v2) for the Node transport (mqtt.io: node): the
// same parser and trust rule as the native driver's (native/core/src/net/proxy.rs), which the
// default transport uses. Pure: bytes in, a decision out; no sockets here (proxy-socket.ts reads).
//
// - v1: one text line `PROXY TCP4|TCP6|UNKNOWN ...\r\n`, 107 bytes at most.
// - v2: 16 bytes (signature, version and command, family, length) and what they announce, 4096
//   bytes at most here. LOCAL, UNSPEC and UNIX carry no client: the connection keeps its real
//   addresses. TLVs read: PP2_TYPE_AUTHORITY and PP2_TYPE_SSL (flags, verify, the CN and
//   version sub-TLVs); the others are skipped, PP2_TYPE_CRC32C is not checked.
import { BlockList, SocketAddress, isIPv4, isIPv6 } from 'node:net';

import { parseCidr } from '../broker/proxy-protocol.ts';

export const V1_MAX = 107;
export const V2_MAX = 4096;

const V1_SIGNATURE = Buffer.from('PROXY ');
const V2_SIGNATURE = Buffer.from('\r\n\r\n\0\r\nQUIT\n', 'latin1');

const PP2_TYPE_AUTHORITY = 0x02;
const PP2_TYPE_SSL = 0x20;
const PP2_SUBTYPE_SSL_VERSION = 0x21;
const PP2_SUBTYPE_SSL_CN = 0x22;
const PP2_CLIENT_SSL = 0x01;
const PP2_CLIENT_CERT_CONN = 0x02;
const PP2_CLIENT_CERT_SESS = 0x04;

/** Why a connection was refused before it reached the engine: the label of
 * spindle_proxy_protocol_errors_total and of the endpoint's connectionErrors (`proxy_<reason>`). */
export type ProxyErrorReason = 'missing' | 'malformed' | 'too_large' | 'untrusted' | 'timeout' | 'closed';

/** The native driver's reason numbers (proxy.rs ProxyError), in order from 1. */
export const PROXY_ERROR_REASONS: readonly ProxyErrorReason[] = ['missing', 'malformed', 'too_large', 'untrusted', 'timeout', 'closed'];

export interface ProxyHeader {
  version: 1 | 2;
  /** The client; absent for LOCAL, UNSPEC, UNIX and UNKNOWN (the real addresses stay). */
  source?: { address: string; port: number };
  /** PP2_TYPE_AUTHORITY: the server name the client asked the balancer for (its TLS SNI). */
  authority?: string;
  /** PP2_TYPE_SSL. */
  ssl?: { client: number; verify: number; version?: string; cn?: string };
}

export type Parsed =
  | { kind: 'need-more' }
  | { kind: 'not-proxy' }
  | { kind: 'header'; header: ProxyHeader; length: number }
  | { kind: 'invalid'; reason: ProxyErrorReason };

const NEED_MORE: Parsed = { kind: 'need-more' };
const NOT_PROXY: Parsed = { kind: 'not-proxy' };
const MALFORMED: Parsed = { kind: 'invalid', reason: 'malformed' };

/** The client spoke TLS to the balancer (PP2_CLIENT_SSL) and presented a certificate, on this
 * connection or its TLS session, that the balancer verified (verify 0). */
export function certificateVerified(h: ProxyHeader | null | undefined): boolean {
  const ssl = h?.ssl;
  return ssl !== undefined && (ssl.client & PP2_CLIENT_SSL) !== 0 && (ssl.client & (PP2_CLIENT_CERT_CONN | PP2_CLIENT_CERT_SESS)) !== 0 && ssl.verify === 0;
}

/** The client spoke TLS to the balancer. */
export function clientSsl(h: ProxyHeader | null | undefined): boolean {
  return h?.ssl !== undefined && (h.ssl.client & PP2_CLIENT_SSL) !== 0;
}

/** true: `buf` starts with a PROXY signature; false: it does not; undefined: too short to tell. */
export function detect(buf: Buffer): boolean | undefined {
  if (buf.length === 0) return undefined;
  for (const sig of [V1_SIGNATURE, V2_SIGNATURE]) {
    const n = Math.min(buf.length, sig.length);
    if (buf.compare(sig, 0, n, 0, n) === 0) return n === sig.length ? true : undefined;
  }
  return false;
}

export function parseProxyHeader(buf: Buffer): Parsed {
  const d = detect(buf);
  if (d === undefined) return NEED_MORE;
  if (!d) return NOT_PROXY;
  return buf[0] === 0x50 ? parseV1(buf) : parseV2(buf);
}

function parseV1(buf: Buffer): Parsed {
  const cr = buf.subarray(0, V1_MAX).indexOf(0x0d);
  if (cr < 0) return buf.length >= V1_MAX ? MALFORMED : NEED_MORE;
  if (cr + 2 > V1_MAX) return MALFORMED;
  if (cr + 1 >= buf.length) return NEED_MORE;
  if (buf[cr + 1] !== 0x0a) return MALFORMED;
  const length = cr + 2;
  const bytes = buf.subarray(V1_SIGNATURE.length, cr);
  for (const b of bytes) if (b > 0x7e || b < 0x20) return MALFORMED;
  const line = bytes.toString('latin1');
  if (line === 'UNKNOWN' || line.startsWith('UNKNOWN ')) return { kind: 'header', header: { version: 1 }, length };
  const parts = line.split(' ');
  if (parts.length !== 5) return MALFORMED;
  const [proto, src, dst, sport, dport] = parts;
  const family = proto === 'TCP4' ? isIPv4 : proto === 'TCP6' ? isIPv6 : null;
  if (family === null || !family(src) || !family(dst)) return MALFORMED;
  const sp = v1Port(sport);
  if (sp === undefined || v1Port(dport) === undefined) return MALFORMED;
  return { kind: 'header', header: { version: 1, source: { address: canonical(src), port: sp } }, length };
}

/** 1 to 5 digits, 0..65535, no leading zero (but "0"). */
function v1Port(s: string): number | undefined {
  if (!/^(0|[1-9][0-9]{0,4})$/.test(s)) return undefined;
  const n = Number(s);
  return n <= 65535 ? n : undefined;
}

function parseV2(buf: Buffer): Parsed {
  if (buf.length < 16) return NEED_MORE;
  const verCmd = buf[12];
  if (verCmd >> 4 !== 2) return MALFORMED;
  const cmd = verCmd & 0x0f;
  if (cmd > 1) return MALFORMED;
  const fam = buf[13];
  const length = 16 + buf.readUInt16BE(14);
  if (length > V2_MAX) return { kind: 'invalid', reason: 'too_large' };
  if (buf.length < length) return NEED_MORE;
  // LOCAL (a health check) and UNSPEC: no client; everything after is skipped.
  if (cmd === 0 || fam >> 4 === 0) return { kind: 'header', header: { version: 2 }, length };
  const body = buf.subarray(16, length);
  const addrLen = fam === 0x11 ? 12 : fam === 0x21 ? 36 : fam === 0x31 ? 216 : -1;
  if (addrLen < 0 || body.length < addrLen) return MALFORMED;
  const header: ProxyHeader = { version: 2 };
  if (fam === 0x11) header.source = { address: `${body[0]}.${body[1]}.${body[2]}.${body[3]}`, port: body.readUInt16BE(8) };
  else if (fam === 0x21) header.source = { address: ipv6Text(body.subarray(0, 16)), port: body.readUInt16BE(32) };
  return readTlvs(body.subarray(addrLen), header) ? { kind: 'header', header, length } : MALFORMED;
}

function readTlvs(tlvs: Buffer, header: ProxyHeader): boolean {
  let at = 0;
  while (at < tlvs.length) {
    if (at + 3 > tlvs.length) return false;
    const type = tlvs[at];
    const end = at + 3 + tlvs.readUInt16BE(at + 1);
    if (end > tlvs.length) return false;
    const value = tlvs.subarray(at + 3, end);
    if (type === PP2_TYPE_AUTHORITY) header.authority = text(value);
    else if (type === PP2_TYPE_SSL) {
      if (value.length < 5) return false;
      const ssl: NonNullable<ProxyHeader['ssl']> = { client: value[0], verify: value.readUInt32BE(1) };
      let s = 5;
      while (s < value.length) {
        if (s + 3 > value.length) return false;
        const sub = value[s];
        const subEnd = s + 3 + value.readUInt16BE(s + 1);
        if (subEnd > value.length) return false;
        const v = value.subarray(s + 3, subEnd);
        if (sub === PP2_SUBTYPE_SSL_VERSION) ssl.version = text(v);
        else if (sub === PP2_SUBTYPE_SSL_CN) ssl.cn = text(v);
        s = subEnd;
      }
      header.ssl = ssl;
    }
    at = end;
  }
  return true;
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/** UTF-8 without control characters, or nothing: an identity is never a lossy copy. */
function text(v: Buffer): string | undefined {
  let s: string;
  try {
    s = utf8.decode(v);
  } catch {
    return undefined;
  }
  // eslint-disable-next-line no-control-regex
  return s === '' || /[\u0000-\u001f\u007f-\u009f]/.test(s) ? undefined : s;
}

/** An IPv6 address as Node and the native driver write a peer's (RFC 5952; IPv4-mapped as
 * ::ffff:a.b.c.d). */
function ipv6Text(b: Buffer): string {
  const words: string[] = [];
  for (let i = 0; i < 16; i += 2) words.push(b.readUInt16BE(i).toString(16));
  return canonical(words.join(':'));
}

function canonical(address: string): string {
  return isIPv6(address) ? new SocketAddress({ address, family: 'ipv6' }).address : address;
}

/** What a listener does with headers (an endpoint's proxyProtocol, when not 'off'). */
export type ProxyMode = 'optional' | 'required';

/** The trusted sources of a listener: CIDR blocks or addresses (IPv4 blocks also cover the
 * IPv4-mapped peers of a dual-stack listener). */
export class TrustedSources {
  private readonly list = new BlockList();

  constructor(blocks: readonly string[]) {
    for (const b of blocks) {
      const c = parseCidr(b);
      if (!c) throw new Error(`not an address or CIDR block: ${b}`);
      this.list.addSubnet(c.address, c.prefix, c.family);
    }
  }

  has(address: string): boolean {
    return this.list.check(address, isIPv4(address) ? 'ipv4' : 'ipv6');
  }
}

export type Decision =
  | { kind: 'wait' }
  | { kind: 'open'; header: ProxyHeader | null; length: number }
  | { kind: 'refuse'; reason: ProxyErrorReason };

const WAIT: Decision = { kind: 'wait' };

/**
 * The one rule of trust (as the native driver's): a header is taken only from a trusted source;
 * from anywhere else it refuses the connection. Without a header, 'optional' opens it as a
 * direct client and 'required' refuses it. (An untrusted source under 'required' is refused at
 * accept, before anything is read.)
 */
export function decide(mode: ProxyMode, trusted: boolean, buf: Buffer): Decision {
  const p = parseProxyHeader(buf);
  switch (p.kind) {
    case 'need-more':
      return WAIT;
    case 'not-proxy':
      return mode === 'optional' ? { kind: 'open', header: null, length: 0 } : { kind: 'refuse', reason: trusted ? 'missing' : 'untrusted' };
    case 'header':
      return trusted ? { kind: 'open', header: p.header, length: p.length } : { kind: 'refuse', reason: 'untrusted' };
    case 'invalid':
      return { kind: 'refuse', reason: trusted ? p.reason : 'untrusted' };
  }
}
