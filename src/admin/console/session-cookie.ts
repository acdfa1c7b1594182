// The console's session: the admin token in an HttpOnly, SameSite=Strict cookie (Secure when the
// console is served over HTTPS), so the page's scripts never hold it and no URL carries it. Writes still need a JSON body (which a form on
// another site cannot send without a CORS preflight, which this server never grants), and the
// cookie is not sent from other sites at all.
export const SESSION_COOKIE = 'spindle_session';

/** The Set-Cookie header that keeps `token` until `expires` (ISO time). */
export function sessionCookie(token: string, expires: string, secure: boolean): string {
  const maxAge = Math.max(0, Math.floor((Date.parse(expires) - Date.now()) / 1000));
  return `${SESSION_COOKIE}=${token}; Max-Age=${maxAge}; Path=/; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
}

/** The Set-Cookie header that ends the session (Secure like the one it replaces). */
export function clearedCookie(secure = false): string {
  return `${SESSION_COOKIE}=; Max-Age=0; Path=/; HttpOnly; SameSite=Strict${secure ? '; Secure' : ''}`;
}

/** "Bearer <token>" from the session cookie of a Cookie header, or undefined. */
export function bearerFromCookie(cookie: string | undefined): string | undefined {
  if (!cookie) return undefined;
  for (const part of cookie.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0 || part.slice(0, eq).trim() !== SESSION_COOKIE) continue;
    const token = part.slice(eq + 1).trim();
    return token ? `Bearer ${token}` : undefined;
  }
  return undefined;
}
