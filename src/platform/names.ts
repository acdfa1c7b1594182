// Names of organizations, projects and applications: they become topic levels (the default
// namespace is <org>/<project>/<app>), so they are topic-safe slugs. And namespaces: topic
// prefixes without wildcards, compared level by level for overlap.
import { invalid } from './errors.ts';

const SLUG = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/;

export function checkName(field: string, v: unknown): string {
  if (typeof v !== 'string' || v.length === 0) throw invalid(field, 'is required (a string)');
  if (!SLUG.test(v)) throw invalid(field, 'must be 1 to 63 of A-Z a-z 0-9 _ . - (starting with a letter or digit): it becomes a topic level');
  return v;
}

/** A namespace as given (`a/b/c` or `a/b/c/#`) as its prefix `a/b/c`. */
export function checkNamespace(field: string, v: unknown, maxLevels: number): string {
  if (typeof v !== 'string' || v.length === 0) throw invalid(field, 'expected a topic prefix such as acme/plant-1/sensors/#');
  const prefix = v.endsWith('/#') ? v.slice(0, -2) : v;
  if (prefix.length === 0 || prefix.length > 1024) throw invalid(field, 'must be 1 to 1024 characters before /#');
  if (prefix.startsWith('$')) throw invalid(field, 'must not start with $ (reserved topics)');
  if (/[+#%\u0000]/.test(prefix)) throw invalid(field, 'must not contain +, # (other than a final /#), % or NUL');
  const levels = prefix.split('/');
  if (levels.some((l) => l.length === 0)) throw invalid(field, 'must not have empty levels');
  if (levels.length >= maxLevels) throw invalid(field, `has ${levels.length} levels; at most ${maxLevels - 1} (limits.maxTopicLevels leaves one for the topic)`);
  return prefix;
}

/** Whether one namespace contains the other (or they are the same). */
export function overlaps(a: string, b: string): boolean {
  return a === b || a.startsWith(`${b}/`) || b.startsWith(`${a}/`);
}
