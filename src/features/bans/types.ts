// The ban list's shapes, shared by its main-thread half, its worker half and its routes.

/** What a ban names, as in EMQX's banned API: a client id, a username, an address
 * (`peerhost`) or a CIDR block (`peerhost_net`). */
export type BanAs = 'clientid' | 'username' | 'peerhost' | 'peerhost_net';

export const BAN_KINDS: readonly BanAs[] = ['clientid', 'username', 'peerhost', 'peerhost_net'];

/** A ban as stored (admin kind 'ban', id `<as>:<who>`) and shown by the API. */
export interface BanDoc {
  as: BanAs;
  /** The client id, username, address or block (addresses and blocks in canonical form). */
  who: string;
  /** Who made it: the admin user, or `flapping`. */
  by: string;
  reason: string;
  /** When it was made (RFC 3339). */
  at: string;
  /** When it ends (RFC 3339), or null: never. */
  until: string | null;
}

/** A ban as a worker holds it: what it names and when it ends (ms since the epoch; 0: never). */
export interface BanSpec {
  as: BanAs;
  who: string;
  until: number;
}

export function banId(as: BanAs, who: string): string {
  return `${as}:${who}`;
}
