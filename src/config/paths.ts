// Owns reading and writing a configuration value by its dotted key ("mqtt.tcp.port") in a
// nested object.

export function getPath(target: unknown, key: string): unknown {
  let node = target as Record<string, unknown> | undefined;
  for (const part of key.split('.')) node = node?.[part] as Record<string, unknown> | undefined;
  return node;
}

/** Sets the value at `key`, making the sections on the way. */
export function setPath(target: Record<string, unknown>, key: string, value: unknown): void {
  const parts = key.split('.');
  let node = target;
  for (const part of parts.slice(0, -1)) {
    node[part] ??= {};
    node = node[part] as Record<string, unknown>;
  }
  node[parts[parts.length - 1]] = value;
}
