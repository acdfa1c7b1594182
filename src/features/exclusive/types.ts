// What the exclusive subscriptions feature offers the others and its routes.
export interface Exclusive {
  readonly enabled: boolean;
  /** Places taken now on this node. */
  size(): number;
}
