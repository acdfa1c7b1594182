// The delayed-publish topic form, as EMQX has it: `$delayed/{seconds}/{topic}`, seconds an
// integer 0..4294967 written in decimal digits, then a topic name of at least one character.

export const DELAYED_PREFIX = '$delayed/';
/** EMQX's bound: the largest delay a $delayed topic may ask, in seconds. */
export const MAX_DELAY_SECONDS = 4_294_967;

export interface DelayedTopic {
  seconds: number;
  topic: string;
}

/** Whether `topic` asks for a delayed publish (it may still be malformed: parseDelayed). */
export function isDelayed(topic: string): boolean {
  return topic.charCodeAt(0) === 0x24 && topic.startsWith(DELAYED_PREFIX);
}

/** The delay and target of a `$delayed/...` topic, or a reason it is malformed. */
export function parseDelayed(topic: string, maxInterval: number): DelayedTopic | { error: string } {
  const slash = topic.indexOf('/', DELAYED_PREFIX.length);
  if (slash < 0) return { error: 'no topic after the delay' };
  const digits = topic.slice(DELAYED_PREFIX.length, slash);
  if (!/^\d{1,7}$/.test(digits)) return { error: 'the delay is not an integer number of seconds' };
  const seconds = Number(digits);
  if (seconds > MAX_DELAY_SECONDS) return { error: `the delay is above ${MAX_DELAY_SECONDS} seconds` };
  if (seconds > maxInterval) return { error: `the delay is above delayed.maxInterval (${maxInterval} seconds)` };
  const target = topic.slice(slash + 1);
  if (target.length === 0) return { error: 'no topic after the delay' };
  if (target.includes('+') || target.includes('#')) return { error: 'the topic has a wildcard' };
  if (target.startsWith(DELAYED_PREFIX)) return { error: 'a delayed topic may not be delayed again' };
  return { seconds, topic: target };
}
