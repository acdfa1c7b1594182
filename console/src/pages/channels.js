// Notification channels of the control platform (/api/v1/notification-channels): the channels
// alert rules notify through, with their organization (or the platform's), type and
// destination; add (webhook, Slack or e-mail, a field per config key), change the name or config
// (the same fields; a secret left as "******", or an e-mail password left empty, is kept by the
// API while the destination stays the same), the API's test action (one
// attempt now, its answer shown in the row), enable, disable, delete (409 while a rule uses it,
// shown in the row). Secrets come back as "******": the page never shows them.
import { h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';

import { attempt, errText } from '../forms.js';
import { NO_PLATFORM_ROLE, platformUser, v1All, v1Write, when } from '../platform.js';

const html = htm.bind(h);
const TYPES = ['webhook', 'slack', 'email'];

/** Where a channel delivers, one line. */
export function destination(ch) {
  const c = ch.config ?? {};
  if (ch.type === 'email') return `${(c.to ?? []).join(', ')} via ${c.host}:${c.port}`;
  return c.url ?? '';
}

export function Channels({ user }) {
  const [channels, setChannels] = useState(null);
  const [orgs, setOrgs] = useState([]);
  const [error, setError] = useState(null);
  async function load() {
    try {
      const [c, o] = await Promise.all([v1All('/notification-channels'), v1All('/organizations')]);
      setChannels(c);
      setOrgs(o);
      setError(null);
    } catch (err) {
      setError(err.message);
    }
  }
  useEffect(() => {
    if (platformUser(user)) void load();
  }, []);
  if (!platformUser(user)) return html`<div><h2>Notification channels</h2><p class="muted">${NO_PLATFORM_ROLE}</p></div>`;
  const orgName = (id) => (id === null ? 'platform' : orgs.find((o) => o.id === id)?.name ?? id);
  return html`<div>
    <h2>Notification channels</h2>
    <p class="muted">Where alert rules send their alerts. A platform channel serves platform-wide rules; an organization's channel serves that organization's rules.</p>
    <${AddChannel} orgs=${orgs} onAdded=${load} />
    ${error && html`<p class="error" role="alert">${error}</p>`}
    <section class="card" aria-label="notification channels">
      <h3>Channels</h3>
      <table>
        <thead><tr><th>Name</th><th>Organization</th><th>Type</th><th>Destination</th><th>State</th><th>Created</th><th></th></tr></thead>
        <tbody>${(channels ?? []).map((ch) => html`<${ChannelRow} key=${ch.id} ch=${ch} org=${orgName(ch.organizationId)} onChanged=${load} />`)}</tbody>
      </table>
      ${channels && channels.length === 0 && html`<p class="muted">No notification channels.</p>`}
    </section>
  </div>`;
}

function ChannelRow({ ch, org, onChanged }) {
  const [error, setError] = useState(null);
  const [changing, setChanging] = useState(false);
  const [result, setResult] = useState(null);
  const [testing, setTesting] = useState(false);
  const id = encodeURIComponent(ch.id);
  const act = (method, path, body, what) => attempt(what, setError, () => /** @type {any} */ (v1Write)(method, path, body), onChanged);
  async function test() {
    setTesting(true);
    setResult(null);
    try {
      const r = (await v1Write('POST', '/notification-channels/{id}/test', {}, { id })).data;
      setError(null);
      setResult(r);
    } catch (err) {
      setError(errText('test', err));
    } finally {
      setTesting(false);
    }
  }
  const status = (r) => `${r.status !== undefined ? `HTTP ${r.status}, ` : ''}${r.ms} ms`;
  return html`<tr data-channel=${ch.name}>
    <td>${ch.name}</td><td>${org}</td><td>${ch.type}</td><td class="wrap"><code>${destination(ch)}</code></td>
    <td class="state">${ch.enabled ? 'enabled' : 'disabled'}</td><td>${when(ch.createTime)}</td>
    <td class="wrap">
      <button onClick=${test} disabled=${testing}>${testing ? 'Testing…' : 'Test'}</button>
      <button onClick=${() => setChanging(!changing)} aria-expanded=${changing ? 'true' : 'false'}>Change</button>
      <button onClick=${() => act('PUT', `/notification-channels/${id}`, { enabled: !ch.enabled }, ch.name)}>${ch.enabled ? 'Disable' : 'Enable'}</button>
      <button class="danger" onClick=${() => act('DELETE', `/notification-channels/${id}`, {}, `delete ${ch.name}`)}>Delete</button>
      ${result && result.ok && html`<span role="status" class="muted" data-testid="test-result">test: delivered (${status(result)})</span>`}
      ${result && !result.ok && html`<span class="error" role="alert" data-testid="test-result">test: failed: ${result.error ?? 'not delivered'} (${status(result)})</span>`}
      ${error && html`<span class="error" role="alert">${error}</span>`}
    </td>
  </tr>${changing && html`<tr data-channel-change=${ch.name}><td colspan="7">
    <${ChangeChannel} ch=${ch} onDone=${async (saved) => { setChanging(false); if (saved) { setResult(null); await onChanged(); } }} /></td></tr>`}`;
}

/** A channel's name and config (its organization and type stay). */
function ChangeChannel({ ch, onDone }) {
  const [error, setError] = useState(null);
  async function submit(e) {
    e.preventDefault();
    const f = new FormData(e.target);
    try {
      await v1Write('PUT', '/notification-channels/{id}', { name: String(f.get('name')).trim(), config: configOf(ch.type, f, ch) }, { id: ch.id });
      setError(null);
      await onDone(true);
    } catch (err) {
      setError(errText(`change ${ch.name}`, err));
    }
  }
  return html`<form class="inline" onSubmit=${submit} aria-label=${`change channel ${ch.name}`}>
    <label>Name <input name="name" required autocomplete="off" defaultValue=${ch.name} /></label>
    <${ConfigFields} type=${ch.type} config=${ch.config ?? {}} />
    <button type="submit">Save</button>
    <button type="button" onClick=${() => onDone(false)}>Cancel</button>
    <span class="muted">Secrets show as ****** and are kept while the destination (URL origin; SMTP host, port, user) stays the same; give them again otherwise.</span>
    ${error && html`<p class="error" role="alert">${error}</p>`}
  </form>`;
}

/** "Name: value" lines as a headers object. */
function headersOf(text) {
  const out = {};
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    const at = line.indexOf(':');
    if (at <= 0) {
      const e = /** @type {Error & { field?: string }} */ (new Error(`expected "Name: value", got ${JSON.stringify(line.trim())}`));
      e.field = 'config.headers';
      throw e;
    }
    out[line.slice(0, at).trim()] = line.slice(at + 1).trim();
  }
  return out;
}

/** The headers object as "Name: value" lines. */
function headerLines(headers) {
  return Object.entries(headers ?? {}).map(([k, v]) => `${k}: ${v}`).join('\n');
}

function configOf(type, f, ch = null) {
  const text = (k) => String(f.get(k) ?? '').trim();
  const num = (k) => (text(k) === '' ? undefined : Number(text(k)));
  const c = {};
  if (type === 'email') {
    c.host = text('host');
    if (num('port') !== undefined) c.port = num('port');
    c.secure = f.get('secure') === 'on';
    if (text('username')) c.username = text('username');
    if (text('password')) c.password = String(f.get('password'));
    // Left empty on a change: the stored password is kept (the API's "unchanged").
    else if (ch?.config?.password !== undefined) c.password = '******';
    c.from = text('from');
    c.to = text('to').split(/[,\s]+/).filter(Boolean);
  } else {
    c.url = text('url');
    if (type === 'webhook') {
      const headers = headersOf(String(f.get('headers') ?? ''));
      if (Object.keys(headers).length > 0) c.headers = headers;
    }
  }
  if (num('timeoutMs') !== undefined) c.timeoutMs = num('timeoutMs');
  if (num('retries') !== undefined) c.retries = num('retries');
  return c;
}

function AddChannel({ orgs, onAdded }) {
  const [type, setType] = useState('webhook');
  const [error, setError] = useState(null);
  async function submit(e) {
    e.preventDefault();
    const form = e.target;
    const f = new FormData(form);
    try {
      const org = String(f.get('organizationId'));
      const body = { organizationId: org === '' ? null : org, name: String(f.get('name')).trim(), type, config: configOf(type, f) };
      await v1Write('POST', '/notification-channels', body);
      setError(null);
      form.reset();
      setType('webhook');
      await onAdded();
    } catch (err) {
      setError(errText('add', err));
    }
  }
  return html`<form class="card inline" onSubmit=${submit} aria-label="add a notification channel">
    <label>Organization <select name="organizationId"><option value="">platform</option>${orgs.map((o) => html`<option value=${o.id}>${o.name}</option>`)}</select></label>
    <label>Name <input name="name" required autocomplete="off" /></label>
    <label>Type <select name="type" value=${type} onChange=${(e) => setType(e.target.value)}>${TYPES.map((t) => html`<option>${t}</option>`)}</select></label>
    <${ConfigFields} type=${type} config=${{}} />
    <button type="submit">Add channel</button>
    ${error && html`<p class="error" role="alert">${error}</p>`}
  </form>`;
}

/** The config fields of a channel type, filled from `config` (empty for a new channel). */
function ConfigFields({ type, config: c }) {
  const value = (v) => (v === undefined || v === null ? '' : String(v));
  return html`
    ${type !== 'email' && html`<label>URL <input name="url" class="wide" type="url" required autocomplete="off" defaultValue=${value(c.url)} placeholder=${type === 'slack' ? 'https://hooks.slack.com/services/…' : 'https://example.com/alerts'} /></label>`}
    ${type === 'webhook' && html`<label>Headers <textarea name="headers" rows="2" cols="30" placeholder="Authorization: Bearer …" defaultValue=${headerLines(c.headers)}></textarea></label>`}
    ${type === 'email' && html`
      <label>SMTP host <input name="host" required autocomplete="off" defaultValue=${value(c.host)} /></label>
      <label>Port <input name="port" type="number" min="1" max="65535" placeholder="587" defaultValue=${value(c.port)} /></label>
      <label class="check"><input type="checkbox" name="secure" defaultChecked=${c.secure === true} /> TLS from the start</label>
      <label>SMTP username <input name="username" autocomplete="off" defaultValue=${value(c.username)} /></label>
      <label>SMTP password <input name="password" type="password" autocomplete="new-password" placeholder=${c.password !== undefined ? 'unchanged' : ''} /></label>
      <label>From <input name="from" required autocomplete="off" placeholder="Spindle <alerts@example.com>" defaultValue=${value(c.from)} /></label>
      <label>To <input name="to" class="wide" required autocomplete="off" placeholder="ops@example.com, oncall@example.com" defaultValue=${(c.to ?? []).join(', ')} /></label>`}
    <label>Timeout (ms) <input name="timeoutMs" type="number" min="100" max="60000" placeholder="5000" defaultValue=${value(c.timeoutMs)} /></label>
    <label>Retries <input name="retries" type="number" min="0" max="10" placeholder="3" defaultValue=${value(c.retries)} /></label>`;
}
