// Owns checking an email address as a channel config gives it (main thread): `user@example.com`
// or `Display Name <user@example.com>`. ASCII only, the dot-atom local part of RFC 5322 (no quoted
// local parts), a host name of letters, digits and hyphens (one label is allowed: `localhost`).
// Answers null when the text is acceptable, else why not.

const LOCAL = /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*$/;
const LABEL = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?$/;
const NAMED = /^([^<>"]*)<([^<>]+)>$/;

export function addressProblem(text: string): string | null {
  const named = NAMED.exec(text.trim());
  if (named) {
    if (/[\0-\x1f\x7f]/.test(named[1])) return 'has a control character in its display name';
    return bareAddressProblem(named[2]);
  }
  return bareAddressProblem(text);
}

function bareAddressProblem(address: string): string | null {
  if (address.length > 254) return 'is longer than 254 characters';
  const at = address.lastIndexOf('@');
  if (at <= 0 || at === address.length - 1) return `is not an email address like user@example.com (got ${JSON.stringify(address)})`;
  const local = address.slice(0, at);
  const domain = address.slice(at + 1);
  if (local.length > 64) return 'has a part before @ longer than 64 characters';
  if (!LOCAL.test(local)) return `has an invalid part before @ (got ${JSON.stringify(local)})`;
  if (domain.length > 253 || !domain.split('.').every((label) => LABEL.test(label))) return `has an invalid domain (got ${JSON.stringify(domain)})`;
  return null;
}
