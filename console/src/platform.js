// @ts-check
// What the control platform's pages (/api/v1) share: paged GETs with a query string, writes with
// the JSON body every non-GET request must carry (also a DELETE); a refusal is shown with
// forms.js errText. The session cookie is the console's own: /api/v1 takes it as the rest of the
// admin API does; an admin is the platform's SystemAdmin, a viewer has no platform role (403).
import { api } from './api.js';

export const V1 = '/api/v1';

/**
 * GET /api/v1<path>?<query>: the answer ({data,total,page,size} for lists). Empty values are left
 * out. `path` is one of the document's (its {parameters} in `params`).
 * @template {import('./api-typing').V1Path<'GET'>} P
 * @param {P} path
 * @param {Record<string, unknown>} [query]
 * @param {Record<string, string | number>} [params]
 * @returns {Promise<any>}
 */
export function v1Get(path, query = {}, params = undefined) {
  return api('GET', /** @type {any} */ (`${V1}${path}`), undefined, /** @type {any} */ ({ query, params }));
}

/**
 * POST, PUT or DELETE on /api/v1<path>: always a JSON body (a DELETE's is `{}`).
 * @template {'POST' | 'PUT' | 'DELETE'} M
 * @template {import('./api-typing').V1Path<M>} P
 * @param {M} method
 * @param {P} path
 * @param {import('./api-typing').BodyOf<`/api/v1${P}` & import('./api-typing').PathOf<M>, M> | {}} [body]
 * @param {Record<string, string | number>} [params]
 * @param {Record<string, unknown>} [query]
 * @returns {Promise<any>}
 */
export function v1Write(method, path, body = {}, params = undefined, query = undefined) {
  return api(method, /** @type {any} */ (`${V1}${path}`), /** @type {any} */ (body), /** @type {any} */ ({ params, query }));
}

/** Every item of a paged list (pages of 1000, the most a page may hold). */
export async function v1All(path, query = {}) {
  const out = [];
  for (let page = 1; ; page++) {
    const r = await v1Get(path, { ...query, page, size: 1000 });
    out.push(...r.data);
    if (out.length >= r.total || r.data.length === 0) return out;
  }
}

/** Whether the signed-in console user may use the control platform (admins are its SystemAdmins). */
export function platformUser(user) {
  return user.role === 'admin';
}

export const NO_PLATFORM_ROLE = 'Viewers have no role on the control platform: its API (/api/v1) answers them 403. An admin (the platform\'s SystemAdmin) sees this page.';

export function when(iso) {
  return iso ? new Date(iso).toLocaleString() : '';
}
