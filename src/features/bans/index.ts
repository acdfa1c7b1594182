// What the ban list offers the rest of the broker.
export { bans } from './feature.ts';
export type { BanList, BanInput } from './ban-list.ts';
export type { BanDoc, BanAs } from './types.ts';
