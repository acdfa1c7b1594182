// Node names as NATS subject tokens: base64url, since names may hold dots (host names).
export function token(name: string): string {
  return Buffer.from(name, 'utf8').toString('base64url');
}

export function untoken(t: string): string {
  return Buffer.from(t, 'base64url').toString('utf8');
}
