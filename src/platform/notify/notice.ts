// Owns the readable forms of an AlertNotice shared by the channel types (main thread): its
// headline ("FIRING critical: High connections"), its fields as label/value pairs, and the notice
// the test action sends.
import type { AlertNotice } from './types.ts';

const KIND_WORD: Record<AlertNotice['kind'], string> = { firing: 'FIRING', resolved: 'RESOLVED', test: 'TEST' };

/** Control characters (a rule name with a line break) never reach a subject or a header. */
export function oneLine(text: string, max = 200): string {
  const s = text.replace(/[\0-\x1f\x7f]+/g, ' ').trim();
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

/** "FIRING critical: High connections". */
export function headline(n: AlertNotice): string {
  return `${KIND_WORD[n.kind]} ${n.severity}: ${oneLine(n.ruleName)}`;
}

/** The notice's facts, in reading order, as label/value pairs (absent ones left out). */
export function noticeFields(n: AlertNotice): Array<[string, string]> {
  const out: Array<[string, string | null]> = [
    ['Rule', n.ruleName],
    ['Severity', n.severity],
    ['Signal', n.signal],
    ['Value', n.value === null ? null : String(n.value)],
    ['Threshold', n.threshold === null ? null : String(n.threshold)],
    ['Organization', n.organizationId],
    ['Node', n.nodeName],
    ['First fired', n.kind === 'test' ? null : n.firstTime],
    ['Time', n.time],
    ['Alert', n.alertId],
  ];
  return out.filter((pair): pair is [string, string] => pair[1] !== null && pair[1] !== '');
}

/** The notice the test action sends: kind "test", nothing measured. */
export function testNotice(nodeName: string, now: Date = new Date()): AlertNotice {
  const time = now.toISOString();
  return {
    kind: 'test',
    alertId: null,
    ruleId: null,
    ruleName: 'Test notification',
    severity: 'info',
    organizationId: null,
    signal: 'test',
    value: null,
    threshold: null,
    message: `A test notification from Spindle node ${nodeName}: this channel works.`,
    firstTime: time,
    time,
    nodeName,
  };
}
