// Topic levels: the count of levels in a topic name or filter, for limits.maxTopicLevels.

/** Levels of a topic name or filter ("a/b/c": 3; "": 1). */
export function levelCount(topic: string): number {
  let n = 1;
  for (let i = topic.indexOf('/'); i !== -1; i = topic.indexOf('/', i + 1)) n++;
  return n;
}

/** Whether `topic` has more than `max` levels. A topic shorter than `max` bytes cannot, so most
 * topics are not counted. */
export function tooManyLevels(topic: string, max: number): boolean {
  return topic.length >= max && levelCount(topic) > max;
}
