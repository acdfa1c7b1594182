// The bans one thread holds, for the questions asked per CONNECT: client ids and usernames in
// Maps (O(1)), addresses and CIDR blocks in one prefix trie (address-trie.ts). An entry whose
// expiry passed never refuses, even before the sweep removes it. Owned by the thread that built
// it (every worker has one; changes arrive as worker operations).
import { AddressTrie, parseAddressInto, parseBlock, type Block } from './address-trie.ts';
import type { BanAs, BanSpec } from './types.ts';

/** Past this many removed blocks (and more than the blocks held), the trie is rebuilt. */
const REBUILD_AFTER = 4096;

export class BanTable {
  private readonly clientIds = new Map<string, number>();
  private readonly usernames = new Map<string, number>();
  private readonly trie = new AddressTrie();
  /** The blocks in the trie, by their text: what a rebuild puts back. */
  private readonly blocks = new Map<string, { block: Block; until: number }>();
  private removedBlocks = 0;
  /** The address being checked (one per table: a check allocates nothing for IPv4). */
  private readonly scratch = new Uint8Array(16);

  /** Bans held (expired ones until they are removed). */
  get size(): number {
    return this.clientIds.size + this.usernames.size + this.blocks.size;
  }

  /** Whether any address or block is banned (else the address is never asked for). */
  get hasAddresses(): boolean {
    return this.blocks.size > 0;
  }

  /** Adds or replaces bans; a spec whose `who` is no address or block (checked by the main
   * thread) is skipped. */
  add(specs: readonly BanSpec[]): void {
    for (const s of specs) {
      const until = s.until === 0 ? Infinity : s.until;
      if (s.as === 'clientid') this.clientIds.set(s.who, until);
      else if (s.as === 'username') this.usernames.set(s.who, until);
      else {
        const block = parseBlock(s.who);
        if (typeof block === 'string') continue;
        this.blocks.set(s.who, { block, until });
        this.trie.set(block, until);
      }
    }
  }

  remove(specs: readonly { as: BanAs; who: string }[]): void {
    for (const s of specs) {
      if (s.as === 'clientid') this.clientIds.delete(s.who);
      else if (s.as === 'username') this.usernames.delete(s.who);
      else {
        const held = this.blocks.get(s.who);
        if (!held) continue;
        this.blocks.delete(s.who);
        this.trie.delete(held.block);
        this.removedBlocks++;
      }
    }
    if (this.removedBlocks > REBUILD_AFTER && this.removedBlocks > this.blocks.size) this.rebuild();
  }

  clear(): void {
    this.clientIds.clear();
    this.usernames.clear();
    this.blocks.clear();
    this.trie.clear();
    this.removedBlocks = 0;
  }

  /**
   * What bans this client now: 'clientid', 'username' or 'peerhost' (an address or block), or
   * null. `peer`'s address (or the address given) is read only when a block is held.
   */
  check(clientId: string, username: string | undefined, peer: string | { readonly remoteAddress: string }, now = Date.now()): BanAs | null {
    if (this.clientIds.size > 0) {
      const until = this.clientIds.get(clientId);
      if (until !== undefined && until > now) return 'clientid';
    }
    if (username !== undefined && this.usernames.size > 0) {
      const until = this.usernames.get(username);
      if (until !== undefined && until > now) return 'username';
    }
    if (this.blocks.size > 0) {
      if (parseAddressInto(typeof peer === 'string' ? peer : peer.remoteAddress, this.scratch) && this.trie.covers(this.scratch, now)) return 'peerhost';
    }
    return null;
  }

  private rebuild(): void {
    this.trie.clear();
    for (const { block, until } of this.blocks.values()) this.trie.set(block, until);
    this.removedBlocks = 0;
  }
}
