// Small pieces the pages share: an API error as the text shown next to what the user did, a write
// that shows its refusal there, a JSON config typed in a textarea, and a list refreshed while its
// page is open.
import { useEffect, useRef } from 'preact/hooks';

/** "what: field: message", without naming the field twice when the message starts with it. */
export function errText(what, err) {
  const msg = err?.message ?? String(err);
  const field = err?.field && !msg.startsWith(`${err.field}:`) && !msg.startsWith(`${err.field} `) ? `${err.field}: ` : '';
  return `${what ? `${what}: ` : ''}${field}${msg}`;
}

/** Runs an API write where the user acted: on success clears the error shown there and runs
 * `after` (a reload), answering the write's answer (true when it had none); a refusal is shown
 * there ("what: field: message") and answers null. */
export async function attempt(what, setError, write, after) {
  try {
    const answer = await write();
    setError(null);
    await after?.();
    return answer ?? true;
  } catch (err) {
    setError(errText(what, err));
    return null;
  }
}

/** The JSON object typed in a config editor; a mistake is an error naming the field. */
export function parseObject(text, field = 'config') {
  let v;
  try {
    v = JSON.parse(text);
  } catch (err) {
    const e = /** @type {Error & { field?: string }} */ (new Error(`not valid JSON: ${err.message}`));
    e.field = field;
    throw e;
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    const e = /** @type {Error & { field?: string }} */ (new Error('must be a JSON object ({...})'));
    e.field = field;
    throw e;
  }
  return v;
}

/** Calls load now and every `ms` while the page is open (never two at once). */
export function usePoll(load, ms) {
  const latest = useRef(load);
  latest.current = load;
  useEffect(() => {
    let running = false;
    const tick = async () => {
      if (running) return;
      running = true;
      try {
        await latest.current();
      } finally {
        running = false;
      }
    };
    void tick();
    const t = setInterval(tick, ms);
    return () => clearInterval(t);
  }, []);
}

export function when(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : d.toLocaleTimeString();
}

export const pretty = (v) => JSON.stringify(v, null, 2);
