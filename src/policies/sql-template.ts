// Owns turning a database policy's SQL text with `${name}` templates into a parameterised
// statement: each template becomes a positional placeholder (`?` for mysql, `$n` for postgresql,
// one `$n` per distinct name) and the names give the values, in order. The text is never built from
// values. The scanner knows the dialect's quoted literals and comments, and refuses a template
// inside one (it would be text, not a parameter, and for mysql a `?` there would still be
// filled), a `?` the user wrote for mysql (mysql2 fills every `?` of the text, even inside a
// literal, so one there would shift the values), and a `$n` the user wrote for postgresql.
import { PolicyConfigError, type PolicyParam } from './types.ts';

export type SqlDialect = 'mysql' | 'postgresql';

export interface SqlTemplate {
  /** The statement with placeholders. */
  text: string;
  /** The parameter of each placeholder, in order (postgresql: of each `$n`). */
  names: PolicyParam[];
  /** The parameters the statement reads. */
  params: Set<PolicyParam>;
}

const IDENT_CHAR = /[A-Za-z0-9_$]/;
const TEMPLATE = /\$\{[^}]*\}/;
const DOLLAR_TAG = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/;
const MYSQL_MARK = 'a ? (even quoted or in a comment) is taken as a parameter by the mysql driver: write ${username} (or another template) for a value, and no other ?';

/** Converts `sql`; throws PolicyConfigError(field) naming what is wrong and where. */
export function compileSqlTemplate(sql: string, dialect: SqlDialect, allowed: readonly PolicyParam[], field = 'config.sql'): SqlTemplate {
  if (sql.trim() === '') throw new PolicyConfigError(field, 'is empty');
  const out: SqlTemplate = { text: '', names: [], params: new Set() };
  const fail = (at: number, message: string): never => {
    throw new PolicyConfigError(field, `${message} (at character ${at + 1}: ${excerpt(sql, at)})`);
  };
  let i = 0;
  while (i < sql.length) {
    const skipped = skipLiteralOrComment(sql, i, dialect, fail);
    if (skipped > i) {
      const region = sql.slice(i, skipped);
      if (TEMPLATE.test(region)) fail(i + region.search(TEMPLATE), templateInside(region));
      if (dialect === 'mysql' && region.includes('?')) fail(i + region.indexOf('?'), MYSQL_MARK);
      out.text += region;
      i = skipped;
      continue;
    }
    const ch = sql[i];
    if (ch === '$' && sql[i + 1] === '{') {
      i = emitTemplate(sql, i, dialect, allowed, out, fail);
      continue;
    }
    if (ch === '?' && dialect === 'mysql') fail(i, MYSQL_MARK);
    if (ch === '$' && dialect === 'postgresql' && /[0-9]/.test(sql[i + 1] ?? '') && !IDENT_CHAR.test(sql[i - 1] ?? '')) {
      fail(i, 'positional parameters ($1, $2...) are assigned by Spindle: write ${username} (or another template) instead');
    }
    out.text += ch;
    i++;
  }
  return out;
}

/** Replaces the template at `start` with its placeholder; answers the index after it. */
function emitTemplate(sql: string, start: number, dialect: SqlDialect, allowed: readonly PolicyParam[], out: SqlTemplate, fail: (at: number, m: string) => never): number {
  const end = sql.indexOf('}', start);
  if (end < 0) fail(start, 'unterminated ${');
  const name = sql.slice(start + 2, end) as PolicyParam;
  if (!allowed.includes(name)) fail(start, `unknown parameter \${${name}} (one of ${allowed.map((a) => `\${${a}}`).join(', ')})`);
  if (IDENT_CHAR.test(sql[start - 1] ?? '') || IDENT_CHAR.test(sql[end + 1] ?? '')) {
    fail(start, `\${${name}} is a whole value: separate it from the text around it with a space or an operator`);
  }
  out.params.add(name);
  if (dialect === 'mysql') {
    out.names.push(name);
    out.text += '?';
  } else {
    let n = out.names.indexOf(name);
    if (n < 0) n = out.names.push(name) - 1;
    out.text += `$${n + 1}`;
  }
  return end + 1;
}

/** The index after the quoted literal, quoted identifier or comment starting at `i`, or `i` when none starts there. */
function skipLiteralOrComment(sql: string, i: number, dialect: SqlDialect, fail: (at: number, m: string) => never): number {
  const ch = sql[i];
  const next = sql[i + 1];
  if (ch === "'" || ch === '"' || ch === '`') return skipQuoted(sql, i, backslashEscapes(sql, i, dialect), fail);
  if (ch === '-' && next === '-' && (dialect === 'postgresql' || /^[\s\x00-\x1f]?$/.test(sql[i + 2] ?? ''))) return lineEnd(sql, i);
  if (ch === '#' && dialect === 'mysql') return lineEnd(sql, i);
  if (ch === '/' && next === '*') return skipBlockComment(sql, i, dialect === 'postgresql', fail);
  if (ch === '$' && dialect === 'postgresql' && !IDENT_CHAR.test(sql[i - 1] ?? '')) {
    const tag = DOLLAR_TAG.exec(sql.slice(i))?.[0];
    if (tag !== undefined) {
      const close = sql.indexOf(tag, i + tag.length);
      if (close < 0) fail(i, `unterminated dollar-quoted string ${tag}`);
      return close + tag.length;
    }
  }
  return i;
}

/** mysql strings take backslash escapes (its default SQL mode); postgresql only E'...' strings. */
function backslashEscapes(sql: string, i: number, dialect: SqlDialect): boolean {
  if (sql[i] === '`') return false;
  if (dialect === 'mysql') return true;
  return sql[i] === "'" && /[Ee]/.test(sql[i - 1] ?? '') && !IDENT_CHAR.test(sql[i - 2] ?? '');
}

function skipQuoted(sql: string, start: number, backslash: boolean, fail: (at: number, m: string) => never): number {
  const quote = sql[start];
  for (let i = start + 1; i < sql.length; i++) {
    if (backslash && sql[i] === '\\') {
      i++;
      continue;
    }
    if (sql[i] !== quote) continue;
    if (sql[i + 1] === quote) {
      i++; // a doubled quote stands for itself
      continue;
    }
    return i + 1;
  }
  return fail(start, `unterminated quoted text ${quote}...`);
}

function skipBlockComment(sql: string, start: number, nests: boolean, fail: (at: number, m: string) => never): number {
  let depth = 0;
  for (let i = start; i < sql.length - 1; i++) {
    if (sql[i] === '/' && sql[i + 1] === '*' && (nests || depth === 0)) {
      depth++;
      i++;
    } else if (sql[i] === '*' && sql[i + 1] === '/') {
      depth--;
      i++;
      if (depth === 0) return i + 1;
    }
  }
  return fail(start, 'unterminated /* comment');
}

function lineEnd(sql: string, i: number): number {
  const nl = sql.indexOf('\n', i);
  return nl < 0 ? sql.length : nl + 1;
}

function templateInside(region: string): string {
  const what = /^(--|#|\/\*)/.test(region) ? 'a comment' : region[0] === '$' ? 'a dollar-quoted string' : `quoted text (${region[0]}...${region[0]})`;
  const name = TEMPLATE.exec(region)?.[0] ?? '${...}';
  return `${name} is inside ${what}: write it unquoted (e.g. WHERE username = ${name}); Spindle sends it as a parameter, never as text`;
}

function excerpt(sql: string, at: number): string {
  const text = sql.slice(Math.max(0, at - 10), at + 30).replace(/\s+/g, ' ');
  return JSON.stringify(text);
}
