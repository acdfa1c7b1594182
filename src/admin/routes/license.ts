// Licence routes (spec 4.11): the licence in force, import of a signed licence, and a refresh
// that reads the stored licence again and re-verifies it. See ../license.ts for the format.
import { Type } from '@sinclair/typebox';

import type { AdminContext } from '../context.ts';
import { ok, type Route } from '../http.ts';
import { Licenses, loadLicensePublicKey } from '../license.ts';
import { route, strict } from '../schema.ts';

export function licenseRoutes(ctx: AdminContext): Route[] {
  // A bad admin.licensePublicKey stops the admin API at start, naming the key.
  const licenses = new Licenses(ctx.store, loadLicensePublicKey(ctx.config.admin.licensePublicKey), ctx.log);
  return [
    {
      method: 'GET',
      path: '/public/license',
      access: 'public',
      tag: 'license',
      summary: `The licence in force: {type, licensee, issued, expires, features, status, source}. Without an imported licence, the community licence (every feature, no expiry). A licence never disables anything.`,
      handler: async () => ok(await licenses.info()),
    },
    route({
      method: 'POST',
      path: '/license/import',
      access: 'write',
      tag: 'license',
      summary: 'Import a signed licence (base64url(payload).base64url(Ed25519 signature)); 400 naming `license` when the format, the signature or the expiry is wrong (the licence in force stays)',
      body: Type.Object({ license: Type.String({ minLength: 1 }) }, strict),
      handler: async (req) => ok(await licenses.import(req.body.license)),
    }),
    route({
      method: 'POST',
      path: '/license/refresh',
      access: 'write',
      tag: 'license',
      summary: 'Read the stored licence again and verify it; answers the licence info (status expired or invalid when it no longer verifies)',
      body: Type.Object({}, strict),
      handler: async () => ok(await licenses.refresh()),
    }),
  ];
}
