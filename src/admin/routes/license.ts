// Licence routes (spec 4.11): the licence in force, import of a signed licence, and a refresh
// that reads the stored licence again and re-verifies it. See ../license.ts for the format.
import { invalid } from '../../errors/domain-error.ts';
import type { AdminContext } from '../context.ts';
import { ok, type Route } from '../http.ts';
import { LicenseError, Licenses, loadLicensePublicKey } from '../license.ts';
import { object, onlyFields, reqStr } from '../validate.ts';

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
    {
      method: 'POST',
      path: '/license/import',
      access: 'write',
      tag: 'license',
      summary: 'Import a signed licence (base64url(payload).base64url(Ed25519 signature)); 400 naming `license` when the format, the signature or the expiry is wrong (the licence in force stays)',
      body: { type: 'object', required: ['license'], properties: { license: { type: 'string' } } },
      async handler(req) {
        const b = object(req.body);
        onlyFields(b, ['license']);
        const token = reqStr(b, 'license');
        try {
          return ok(await licenses.import(token));
        } catch (err) {
          if (err instanceof LicenseError) throw invalid('license', `${reasonText(err)}: ${err.message}`);
          throw err;
        }
      },
    },
    {
      method: 'POST',
      path: '/license/refresh',
      access: 'write',
      tag: 'license',
      summary: 'Read the stored licence again and verify it; answers the licence info (status expired or invalid when it no longer verifies)',
      body: { type: 'object', properties: {} },
      async handler(req) {
        onlyFields(object(req.body), []);
        return ok(await licenses.refresh());
      },
    },
  ];
}

function reasonText(err: LicenseError): string {
  switch (err.reason) {
    case 'format': return 'bad format';
    case 'signature': return 'bad signature';
    case 'expired': return 'expired';
  }
}
