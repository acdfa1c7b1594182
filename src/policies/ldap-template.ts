// Owns the templates of an `ldap` policy (the user DN, the user and group search filters) and the
// escaping of what a client sends into them. A client's username goes into a DN as an attribute
// value escaped per RFC 4514 (section 2.4) and into a filter as an assertion value escaped per
// RFC 4515 (section 3), so no username can add an RDN, end a filter or turn an equality into a
// wildcard match. Placeholders: `${username}`, `${clientid}` and, in the group filter, `${dn}`
// (the user's DN); Mosquitto's and OpenLDAP tools' `%u`, `%c` and `%d` are read the same way, and
// `%%` is a `%`.
import { PolicyConfigError } from './types.ts';

export type LdapParam = 'username' | 'clientid' | 'dn';

/** Where a template's values go: a DN's attribute value or a filter's assertion value. */
export type Context = 'dn' | 'filter';

type Part = string | { param: LdapParam };

const PERCENT: Record<string, LdapParam> = { u: 'username', c: 'clientid', d: 'dn' };
const NAMED = new Set<string>(['username', 'clientid', 'dn']);
const TOKEN = /\$\{([^}]*)\}|%(.)|%$/g;

export class LdapTemplate {
  readonly params: ReadonlySet<LdapParam>;

  private constructor(
    readonly source: string,
    private readonly parts: readonly Part[],
    private readonly context: Context,
  ) {
    this.params = new Set(parts.filter((p): p is { param: LdapParam } => typeof p !== 'string').map((p) => p.param));
  }

  /** Reads `text`; a placeholder not in `allowed` is a PolicyConfigError naming `field`. */
  static parse(text: string, context: Context, allowed: readonly LdapParam[], field: string): LdapTemplate {
    const parts: Part[] = [];
    let last = 0;
    for (const m of text.matchAll(TOKEN)) {
      if (m.index > last) parts.push(text.slice(last, m.index));
      last = m.index + m[0].length;
      if (m[0] === '%%') {
        parts.push('%');
        continue;
      }
      const name = m[1] !== undefined ? (NAMED.has(m[1]) ? (m[1] as LdapParam) : undefined) : m[2] !== undefined ? PERCENT[m[2]] : undefined;
      if (name === undefined || !allowed.includes(name)) {
        const names = allowed.map((a) => `\${${a}}`).join(', ');
        throw new PolicyConfigError(field, `unknown placeholder ${m[0]} (one of ${names}; %u, %c, %d for short; %% for a %)`);
      }
      parts.push({ param: name });
    }
    if (last < text.length) parts.push(text.slice(last));
    return new LdapTemplate(text, parts, context);
  }

  /** The text with every placeholder replaced by its value, escaped for the template's context. */
  fill(values: Partial<Record<LdapParam, string>>): string {
    let out = '';
    for (const p of this.parts) {
      if (typeof p === 'string') out += p;
      else {
        const v = values[p.param] ?? '';
        out += this.context === 'dn' ? escapeDnValue(v) : escapeFilterValue(v);
      }
    }
    return out;
  }
}

/** RFC 4514 section 2.4: an attribute value in a DN string. `"+,;<>\` and `=` get a backslash
 * (`=` is optional there; escaping it is always read back the same), a leading space or `#` and
 * a trailing space too, and NUL is `\00`. */
export function escapeDnValue(value: string): string {
  let out = '';
  for (let i = 0; i < value.length; i++) {
    const c = value[i];
    if (c === '\0') out += '\\00';
    else if ('"+,;<>\\='.includes(c)) out += `\\${c}`;
    else if ((i === 0 && (c === ' ' || c === '#')) || (i === value.length - 1 && c === ' ')) out += `\\${c}`;
    else out += c;
  }
  return out;
}

/** RFC 4515 section 3: an assertion value in a filter string: `*`, `(`, `)`, `\` and NUL as a
 * backslash and two hex digits. */
export function escapeFilterValue(value: string): string {
  return value.replace(/[*()\\\0]/g, (c) => `\\${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/**
 * A filter's outline checked without a parser: it is one parenthesized expression whose
 * parentheses balance (a `\28` or `\29` is a value's). The full check is ldapts' parser, run by
 * the dry run (ldap.ts): the library loads only when a policy is used.
 */
export function filterShapeProblem(filter: string): string | undefined {
  if (!filter.startsWith('(') || !filter.endsWith(')')) return 'must be one parenthesized filter, e.g. (uid=${username})';
  let depth = 0;
  for (let i = 0; i < filter.length; i++) {
    const c = filter[i];
    if (c === '(') depth++;
    else if (c === ')') {
      depth--;
      if (depth < 0 || (depth === 0 && i !== filter.length - 1)) return 'its parentheses do not balance (one filter, e.g. (&(a=1)(b=2)))';
    }
  }
  return depth === 0 ? undefined : 'its parentheses do not balance';
}

/**
 * A DN compared with another as a directory would, roughly: attribute types and values
 * case-insensitive (cn and the usual naming attributes match so), spaces around `,`, `+` and
 * `=` dropped. Escapes are kept as written, so `cn=a\,b` never equals `cn=a,b`.
 */
export function normalizeDn(dn: string): string {
  return dn.trim().replace(/\s*(?<!\\)([,+=])\s*/g, '$1').toLowerCase();
}

/** The value of a DN's first RDN (`sensors` of `cn=sensors,ou=groups,...`), unescaped, lower-case. */
export function firstRdnValue(dn: string): string {
  const m = /^[^=]*=((?:\\.|[^,+\\])*)/s.exec(dn);
  return m === null ? '' : unescapeDnValue(m[1]).trim().toLowerCase();
}

/** An RFC 4514 value with its escapes read: `\,` is `,`, `\c3\a9` is the bytes of `é`. */
function unescapeDnValue(v: string): string {
  const chunks: Buffer[] = [];
  let text = '';
  for (let i = 0; i < v.length; i++) {
    if (v[i] !== '\\' || i + 1 >= v.length) {
      text += v[i];
      continue;
    }
    const hex = v.slice(i + 1, i + 3);
    if (/^[0-9a-fA-F]{2}$/.test(hex)) {
      chunks.push(Buffer.from(text, 'utf8'), Buffer.from([parseInt(hex, 16)]));
      text = '';
      i += 2;
    } else {
      text += v[i + 1];
      i++;
    }
  }
  chunks.push(Buffer.from(text, 'utf8'));
  return Buffer.concat(chunks).toString('utf8');
}
