// What a manager needs to run each of its objects on one node of a cluster at a time (commands,
// bridges): src/cluster/leases.ts is the implementation, handed to the managers by the
// composition roots when clustering is on.

export interface RunLeases {
  /** Runs `holder` on whichever node holds `key`: granted() here once this node gets it, lost()
   * when it loses it. */
  want(key: string, holder: { granted(): void; lost(): void }): void;
  /** Stopped here already: gives the lease up, if held, so another node takes over. */
  release(key: string): Promise<void>;
  /** The node that runs `key`, as last seen (null: nobody known). */
  owner(key: string): string | null;
}
