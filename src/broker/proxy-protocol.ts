// The PROXY protocol settings of an endpoint (proxyProtocol, proxyProtocolTrusted,
// proxyProtocolCnAsUsername, and the mqtt.<listener>.proxyProtocol* keys of the configuration
// file): the modes, the bounds, and what a trusted block may be. Pure data; the listeners read
// the headers (src/listener/proxy-header.ts, native/core/src/net/proxy.rs).
import { isIPv4, isIPv6 } from 'node:net';

export const PROXY_MODES = ['off', 'optional', 'required'] as const;
export type ProxyProtocolMode = (typeof PROXY_MODES)[number];

/** Milliseconds a connection of an endpoint with PROXY protocol on has to send its header (under
 * 'optional': its first bytes), as long as the CONNECT that would follow is given. */
export const PROXY_HEADER_TIMEOUT_MS = 10_000;

/** Trusted blocks an endpoint may list. */
export const MAX_TRUSTED_BLOCKS = 256;

/** `a.b.c.d`, `a.b.c.d/n` (0..32), an IPv6 address or one with `/n` (0..128); null otherwise. */
export function parseCidr(text: string): { address: string; prefix: number; family: 'ipv4' | 'ipv6' } | null {
  const slash = text.indexOf('/');
  const address = slash < 0 ? text : text.slice(0, slash);
  const family = isIPv4(address) ? 'ipv4' : isIPv6(address) && !address.includes('%') ? 'ipv6' : null;
  if (family === null) return null;
  const max = family === 'ipv4' ? 32 : 128;
  if (slash < 0) return { address, prefix: max, family };
  const p = text.slice(slash + 1);
  if (!/^[0-9]{1,3}$/.test(p) || Number(p) > max) return null;
  return { address, prefix: Number(p), family };
}

/** Why `list` is not a list of trusted blocks, with the index of the bad one; undefined when it is. */
export function trustedProblem(list: readonly string[]): { index?: number; message: string } | undefined {
  if (list.length > MAX_TRUSTED_BLOCKS) return { message: `at most ${MAX_TRUSTED_BLOCKS} blocks` };
  for (let i = 0; i < list.length; i++) {
    if (parseCidr(list[i]) === null) return { index: i, message: `not an IP address or CIDR block (a.b.c.d/n, x:y::z/n): ${JSON.stringify(list[i])}` };
  }
  return undefined;
}
