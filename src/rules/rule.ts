// A rule as stored and as the API shows it, and its validation: the SQL parses, every action is
// a known type whose config is right, names a data source of its type, and a republish cannot
// feed its own rule directly (a constant topic that the rule's FROM matches is refused; deeper
// loops are bounded at run time, see MAX_REPUBLISH_DEPTH).
import { parseRule, SqlSyntaxError, type ParsedRule } from './sql/index.ts';
import { actionSpec, ActionConfigError } from './actions/index.ts';
import { isConstant } from './template.ts';
import { RuleError } from './errors.ts';
import { matches as topicMatches } from '../auth/topic-filter.ts';
import type { SourceType } from '../sources/types.ts';

export interface RuleAction {
  type: string;
  config: Record<string, unknown>;
}

export interface RuleDoc {
  id: string;
  name: string;
  sql: string;
  actions: RuleAction[];
  enabled: boolean;
  description: string;
  createTime: string;
}

/** Parses the SQL; a syntax error is a 400 on `sql` with its line, column and what was expected. */
export function parseSql(sql: string, field = 'sql'): ParsedRule {
  try {
    return parseRule(sql);
  } catch (err) {
    if (err instanceof SqlSyntaxError) {
      throw new RuleError(400, field, `${field}: ${err.message}`, { line: err.line, column: err.column, expected: err.expected, found: err.found });
    }
    throw err;
  }
}

/** Checks actions against their specs and the sources; throws a RuleError naming the field. */
export function validateActions(actions: readonly RuleAction[], parsed: ParsedRule, sourceType: (id: string) => SourceType | undefined): void {
  actions.forEach((a, i) => {
    const at = `actions[${i}]`;
    const spec = actionSpec(a.type);
    if (!spec) throw new RuleError(400, `${at}.type`, `${at}.type: unknown action type ${JSON.stringify(a.type)}`);
    try {
      spec.compile(a.config);
    } catch (err) {
      if (err instanceof ActionConfigError) throw new RuleError(400, `${at}.config.${err.field}`, `${at}.config.${err.field}: ${err.message.replace(/^[^:]*: /, '')}`);
      throw err;
    }
    if (spec.sourceType !== null) {
      const id = a.config.source;
      const type = typeof id === 'string' ? sourceType(id) : undefined;
      if (type === undefined) throw new RuleError(400, `${at}.config.source`, `${at}.config.source: no data source ${JSON.stringify(id)}`);
      if (type !== spec.sourceType) throw new RuleError(400, `${at}.config.source`, `${at}.config.source: ${a.type} needs a ${spec.sourceType} source, ${id} is ${type}`);
    }
    if (a.type === 'republish') {
      const topic = a.config.topic as string;
      if (isConstant(topic) && parsed.filters.some((f) => topicMatches(f, topic))) {
        throw new RuleError(400, `${at}.config.topic`, `${at}.config.topic: republishing to ${topic} would feed this rule again (its FROM matches it)`);
      }
    }
  });
}
