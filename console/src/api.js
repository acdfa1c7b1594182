// Calls to the admin API from the page: same origin, the session in an HttpOnly cookie (never in
// the page or a URL), JSON in and out. A failure is an ApiError with the server's message and the
// field it names, so a form can show it where the user acted.
export class ApiError extends Error {
  constructor(status, message, field) {
    super(message);
    this.status = status;
    this.field = field;
  }
}

export async function api(method, path, body) {
  // X-Requested-With: a 401 then comes without a Basic challenge (no browser password dialog).
  const init = { method, credentials: 'same-origin', headers: { 'x-requested-with': 'spindle-console' } };
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(path, init);
  } catch (err) {
    throw new ApiError(0, `the admin server did not answer: ${err.message}`);
  }
  const text = await res.text();
  let json = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    // not JSON: the text is the message
  }
  if (!res.ok) throw new ApiError(res.status, json?.message ?? (text || res.statusText), json?.field);
  return json;
}
