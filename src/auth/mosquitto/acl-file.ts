// Owns Mosquitto ACL files (mosquitto.conf(5) `acl_file`), so a Mosquitto deployment's file works
// unchanged: parsing, and the decision for one client. Lines:
//   topic [read|write|readwrite|deny] <topic>    before any `user` line: anonymous clients;
//                                                after `user <name>`: that user (no placeholders)
//   pattern [read|write|readwrite|deny] <topic>  every client; %c and %u stand for client id, username
//   user <name>
// The access word is optional (readwrite); with it, the topic may contain spaces. Lines starting
// with '#' and blank lines are ignored; anything else is a MosquittoFileError naming the line.
// Decisions: `read` grants reading (a rule filter covering the requested filter, or matching a
// delivered topic), `write` grants publish (a rule filter matching the topic); deny rules are
// tried first and win; anything not granted is denied. As in Mosquitto, read access is checked
// per delivered message: a subscription is granted when some topic of its filter may be read
// (aclFileScope), and one that a deny overlaps or a grant only partly covers is checked message by
// message (aclFileAllows on the topic name).
import { aclPatternProblem, compileAclPattern, expandAclPattern, type AclPattern } from '../acl-pattern.ts';
import { coverLevels, matchLevels, overlapLevels, type FilterLevel } from '../topic-filter.ts';
import type { ClientIdentity, ReadScope } from '../types.ts';
import { MosquittoFileError } from './errors.ts';

export type AclAccess = 'read' | 'write' | 'readwrite' | 'deny';
const ACCESS: readonly string[] = ['read', 'write', 'readwrite', 'deny'];

export interface AclFileRule {
  access: AclAccess;
  pattern: AclPattern;
  /** Line number in the file, for messages. */
  line: number;
}

export interface AclFile {
  /** `topic` lines before the first `user` line. */
  anonymous: AclFileRule[];
  /** `topic` lines after `user <name>`, by name. */
  users: Map<string, AclFileRule[]>;
  /** `pattern` lines, for every client. */
  patterns: AclFileRule[];
}

/** Parses the text of an ACL file; `source` names it in errors. */
export function parseAclFile(text: string, source = 'ACL file'): AclFile {
  const acl: AclFile = { anonymous: [], users: new Map(), patterns: [] };
  let current = acl.anonymous;
  const lines = text.split(/\r?\n/);
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].trim();
    if (line === '' || line.startsWith('#')) continue;
    const at = `${source} line ${i + 1}`;
    const space = line.search(/\s/);
    const keyword = space === -1 ? line : line.slice(0, space);
    const rest = space === -1 ? '' : line.slice(space).trim();
    if (keyword === 'user') {
      if (rest === '') throw new MosquittoFileError('MOSQUITTO_ACL_INVALID', `${at}: "user" needs a username`);
      current = acl.users.get(rest) ?? [];
      acl.users.set(rest, current);
      continue;
    }
    if (keyword !== 'topic' && keyword !== 'pattern') {
      throw new MosquittoFileError('MOSQUITTO_ACL_INVALID', `${at}: expected "topic", "pattern" or "user", not ${JSON.stringify(keyword)}`);
    }
    const rule = parseRule(keyword, rest, i + 1, at);
    (keyword === 'pattern' ? acl.patterns : current).push(rule);
  }
  return acl;
}

function parseRule(keyword: 'topic' | 'pattern', rest: string, line: number, at: string): AclFileRule {
  const space = rest.search(/\s/);
  const first = space === -1 ? rest : rest.slice(0, space);
  let access: AclAccess = 'readwrite';
  let topic = rest;
  if (space !== -1 && ACCESS.includes(first)) {
    access = first as AclAccess;
    topic = rest.slice(space).trim();
  }
  if (topic === '') throw new MosquittoFileError('MOSQUITTO_ACL_INVALID', `${at}: "${keyword}" needs a topic`);
  // A `topic` line has no placeholders: every '%' is literal.
  const source = keyword === 'topic' ? topic.replaceAll('%', '%%') : topic;
  const problem = aclPatternProblem(source);
  if (problem !== undefined) throw new MosquittoFileError('MOSQUITTO_ACL_INVALID', `${at}: ${JSON.stringify(topic)} is not a valid topic filter: ${problem}`);
  return { access, pattern: compileAclPattern(source), line };
}

/**
 * The ACL file's decision: may `who` publish to the topic name (`publish`, `requested` its levels)
 * or subscribe to the filter (`requested` its parsed levels, '$share/<group>/' already removed)?
 */
export function aclFileAllows(acl: AclFile, who: ClientIdentity, publish: boolean, requested: readonly FilterLevel[]): boolean {
  const own = who.username === undefined ? acl.anonymous : acl.users.get(who.username);
  const lists = own ? [own, acl.patterns] : [acl.patterns];
  for (const list of lists) {
    for (const rule of list) {
      if (rule.access !== 'deny') continue;
      const levels = expandAclPattern(rule.pattern, who.clientId, who.username);
      if (levels === undefined) continue;
      if (publish ? matchLevels(levels, requested as string[]) : overlapLevels(levels, requested)) return false;
    }
  }
  const wanted = publish ? 'write' : 'read';
  for (const list of lists) {
    for (const rule of list) {
      if (rule.access !== wanted && rule.access !== 'readwrite') continue;
      const levels = expandAclPattern(rule.pattern, who.clientId, who.username);
      if (levels === undefined) continue;
      if (publish ? matchLevels(levels, requested as string[]) : coverLevels(levels, requested)) return true;
    }
  }
  return false;
}

/** What a subscription to the filter `requested` (parsed, without '$share/<group>/') may read
 * under the ACL file (acl-scope.ts): 'none' when a deny covers it or no read grant overlaps it,
 * 'all' when a read grant covers it and no deny overlaps it, 'some' otherwise. */
export function aclFileScope(acl: AclFile, who: ClientIdentity, requested: readonly FilterLevel[]): ReadScope {
  const own = who.username === undefined ? acl.anonymous : acl.users.get(who.username);
  const lists = own ? [own, acl.patterns] : [acl.patterns];
  let denyOverlaps = false;
  for (const list of lists) {
    for (const rule of list) {
      if (rule.access !== 'deny') continue;
      const levels = expandAclPattern(rule.pattern, who.clientId, who.username);
      if (levels === undefined) continue;
      if (coverLevels(levels, requested)) return 'none';
      if (overlapLevels(levels, requested)) denyOverlaps = true;
    }
  }
  let grantOverlaps = false;
  for (const list of lists) {
    for (const rule of list) {
      if (rule.access !== 'read' && rule.access !== 'readwrite') continue;
      const levels = expandAclPattern(rule.pattern, who.clientId, who.username);
      if (levels === undefined) continue;
      if (coverLevels(levels, requested)) return denyOverlaps ? 'some' : 'all';
      if (overlapLevels(levels, requested)) grantOverlaps = true;
    }
  }
  return grantOverlaps ? 'some' : 'none';
}
