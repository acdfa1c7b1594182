// The admin API of a test broker: a broker with the admin server on a free port, and a small
// fetch wrapper that signs in as the admin, a viewer, nobody, or with given credentials, and can
// send from another loopback address (`from`, e.g. 127.0.0.2) to look like another client.
import http from 'node:http';

import { startBroker, ADMIN_PASSWORD, type TestBroker } from './broker.ts';

export const VIEWER = { username: 'viewer', password: 'viewer-password' };

export interface AdminBroker extends TestBroker {
  /** http://127.0.0.1:<admin port> */
  base: string;
  api(method: string, path: string, options?: { body?: unknown; as?: 'admin' | 'viewer' | 'none'; authorization?: string; raw?: string; headers?: Record<string, string>; from?: string }): Promise<ApiResponse>;
}

export interface ApiResponse {
  status: number;
  headers: Headers;
  text: string;
  /** The parsed JSON body (undefined when it is not JSON). */
  json: any;
}

export function basic(username: string, password: string): string {
  return `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
}

export async function startAdminBroker(overrides: Record<string, unknown> = {}): Promise<AdminBroker> {
  const admin = (overrides.admin as Record<string, unknown> | undefined) ?? {};
  const broker = await startBroker({ ...overrides, admin: { ...admin, enabled: true } });
  await broker.admin!.context.auth.addUser(VIEWER.username, VIEWER.password, 'viewer');
  const base = `http://127.0.0.1:${broker.admin!.port}`;
  const api: AdminBroker['api'] = async (method, path, options = {}) => {
    const headers: Record<string, string> = { ...options.headers };
    const as = options.as ?? 'admin';
    if (options.authorization !== undefined) headers.authorization = options.authorization;
    else if (as === 'admin') headers.authorization = basic('admin', ADMIN_PASSWORD);
    else if (as === 'viewer') headers.authorization = basic(VIEWER.username, VIEWER.password);
    let body: string | undefined = options.raw;
    if (options.body !== undefined) body = JSON.stringify(options.body);
    if (body !== undefined) headers['content-type'] ??= 'application/json';
    const res = options.from === undefined ? await fetch(base + path, { method, headers, body }) : await request(base + path, method, headers, body, options.from);
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    return { status: res.status, headers: res.headers, text, json: parsed };
  };
  return { ...broker, base, api };
}

/** One request from the local address `from` (fetch cannot choose it), answered like fetch. */
function request(url: string, method: string, headers: Record<string, string>, body: string | undefined, from: string): Promise<Response> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers, localAddress: from }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const h = new Headers();
        for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) h.set(k, Array.isArray(v) ? v.join(', ') : v);
        resolve(new Response(Buffer.concat(chunks), { status: res.statusCode, headers: h }));
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}
