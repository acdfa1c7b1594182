// Topics the broker owns: clients may not publish to them. MQTT 5.0 section 4.7.2 leaves topics
// starting with `$` to the server; Spindle owns `$SYS/` (its statistics) and the `$share/` and
// `$queue/` prefixes (shared subscriptions, never topic names). Other `$` topics (`$aws/...`-style
// names that tools use) are ordinary topics, subject to the access rules like any other.

/** Whether a client may not publish to `topic` (a will to it is not published either). */
export function reservedTopic(topic: string): boolean {
  if (topic.charCodeAt(0) !== 0x24) return false;
  return topic.startsWith('$SYS/') || topic === '$SYS' || topic.startsWith('$share/') || topic.startsWith('$queue/');
}
