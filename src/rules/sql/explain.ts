// Runs a rule on one event for /rule/test and says why it produced nothing: the event is not one
// of the rule's sources, the topic matches none of its filters, or WHERE was not true. Runtime
// errors (SqlRuntimeError) pass through to the caller.

import { matchLevels, parseFilter } from '../../auth/topic-filter.ts';
import type { ParsedRule } from './ast.ts';
import type { CompiledRule } from './compile.ts';
import type { RuleContext } from './context.ts';
import { textOf } from './values.ts';

export function explain(parsed: ParsedRule, compiled: CompiledRule, ctx: RuleContext): { output: Record<string, unknown> } | { filtered: string } {
  if (!parsed.events.includes(ctx.event)) {
    return { filtered: `the event ${ctx.event} is not a source of this rule (it listens to ${parsed.events.join(', ')})` };
  }
  if (ctx.event === 'PUBLISH') {
    const topic = textOf(ctx.fields.topic);
    if (typeof topic !== 'string') return { filtered: 'the PUBLISH event has no topic' };
    const levels = topic.split('/');
    if (!parsed.filters.some((f) => matchLevels(parseFilter(f), levels))) {
      return { filtered: `the topic "${topic}" matches none of the rule's filters (${parsed.filters.join(', ')})` };
    }
  }
  const output = compiled(ctx);
  if (output === null) return { filtered: 'the WHERE condition is not true' };
  return { output };
}
