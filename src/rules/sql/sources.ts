// The FROM clause's sources: a quoted MQTT topic filter (the PUBLISH event on that filter), or a
// named event, `$EVENT.CONNECT` or one of EMQX's `$events/client_connected` aliases. Turns the
// quoted text into a RuleSource, or says why it is not one.

import { topicFilterProblem } from '../../auth/topic-filter.ts';
import { EVENT_NAMES, type EventName, type RuleSource } from './ast.ts';

const EMQX_EVENTS: Record<string, EventName> = {
  message_publish: 'PUBLISH',
  client_connected: 'CONNECT',
  client_disconnected: 'CLOSE',
  session_subscribed: 'SUBSCRIBE',
  session_unsubscribed: 'UNSUBSCRIBE',
  message_delivered: 'DELIVERED',
  message_acked: 'ACK',
  message_dropped: 'DROP',
};

const EVENT_PREFIX = '$event.';
const EMQX_PREFIX = '$events/';

/** The source named by a FROM string, or a sentence saying why the string names none. */
export function resolveSource(text: string): RuleSource | string {
  const lower = text.toLowerCase();
  if (lower.startsWith(EVENT_PREFIX)) {
    const name = text.slice(EVENT_PREFIX.length).toUpperCase();
    if ((EVENT_NAMES as readonly string[]).includes(name)) return { kind: 'event', event: name as EventName };
    return `unknown event "${text}": expected $EVENT. followed by one of ${EVENT_NAMES.join(', ')}`;
  }
  if (lower.startsWith(EMQX_PREFIX)) {
    const event = EMQX_EVENTS[lower.slice(EMQX_PREFIX.length)];
    if (event !== undefined) return { kind: 'event', event };
    return `unknown event "${text}": expected $events/ followed by one of ${Object.keys(EMQX_EVENTS).join(', ')}`;
  }
  const problem = topicFilterProblem(text);
  if (problem !== undefined) return `invalid topic filter "${text}": ${problem}`;
  // A rule sees every message its filter matches: a shared subscription would give it some.
  if (/^\$(share|queue)\//.test(text)) return `invalid topic filter "${text}": a rule cannot be a shared subscription`;
  return { kind: 'topic', filter: text };
}

/** The events a rule listens to and the topic filters of its PUBLISH sources. */
export function listenedTo(sources: readonly RuleSource[]): { events: EventName[]; filters: string[] } {
  const events = new Set<EventName>();
  const filters = new Set<string>();
  for (const s of sources) {
    if (s.kind === 'topic') {
      events.add('PUBLISH');
      filters.add(s.filter);
    } else {
      events.add(s.event);
      if (s.event === 'PUBLISH') filters.add('#');
    }
  }
  return { events: EVENT_NAMES.filter((e) => events.has(e)), filters: [...filters] };
}
