// Licences of the control platform (/api/v1/licenses): each licence with its tenant (an
// organization as a whole, or one application), its terms (maximum connections, maximum message
// rate, expiry, features) and its usage as the API answers it (connections, messages per second,
// received, throttled, refused, ACL denials; refreshed every 5 s while the page is open); grant
// (add), change the terms, withdraw (delete). Granting and changing are the SystemAdmin's (the
// console's admin).
import { h } from 'preact';
import { useState } from 'preact/hooks';
import htm from 'htm';

import { attempt, errText, usePoll } from '../forms.js';
import { NO_PLATFORM_ROLE, platformUser, v1All, v1Write, when } from '../platform.js';

const html = htm.bind(h);
const REFRESH_MS = 5000;

/** "n of max (p%)", or "n (no limit)". */
function against(n, max, pct) {
  return max === null || max === undefined ? `${n} (no limit)` : `${n} of ${max}${pct === null || pct === undefined ? '' : ` (${pct}%)`}`;
}

/** A limit typed in a form: empty is no limit (null). */
function limitOf(f, field) {
  const v = String(f.get(field) ?? '').trim();
  return v === '' ? null : Number(v);
}

/** A datetime-local value as ISO 8601 (empty: never expires). */
function expiresOf(f) {
  const v = String(f.get('expires') ?? '').trim();
  if (v === '') return null;
  const t = new Date(v);
  return Number.isNaN(t.getTime()) ? v : t.toISOString();
}

/** ISO 8601 as a datetime-local value (local time, minutes). */
function localInput(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  const pad = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

const featuresOf = (f) => String(f.get('features') ?? '').split(',').map((s) => s.trim()).filter(Boolean);

export function Licenses({ user }) {
  const [licenses, setLicenses] = useState(null);
  const [orgs, setOrgs] = useState([]);
  const [apps, setApps] = useState([]);
  const [error, setError] = useState(null);
  const allowed = platformUser(user);
  async function load() {
    if (!allowed) return;
    try {
      const [l, o, a] = await Promise.all([v1All('/licenses'), v1All('/organizations'), v1All('/applications')]);
      setLicenses(l);
      setOrgs(o);
      setApps(a);
      setError(null);
    } catch (err) {
      setError(err.message);
    }
  }
  usePoll(load, REFRESH_MS);
  if (!allowed) return html`<div><h2>Licences</h2><p class="muted">${NO_PLATFORM_ROLE}</p></div>`;
  const orgName = (id) => orgs.find((o) => o.id === id)?.name ?? id;
  const appName = (id) => (id === null ? 'whole organization' : apps.find((a) => a.id === id)?.name ?? id);
  return html`<div>
    <h2>Licences</h2>
    <p class="muted">A licence limits an organization (all its applications together) or one application. Past its maximum connections a CONNECT is refused (0x97); past its message rate publishes are throttled. An expired licence admits no new connection. Features are recorded, not enforced.</p>
    <${AddLicense} orgs=${orgs} apps=${apps} onAdded=${load} />
    ${error && html`<p class="error" role="alert">${error}</p>`}
    <section class="card" aria-label="licences">
      <h3>Licences</h3>
      <table>
        <thead><tr><th>Tenant</th><th>Connections</th><th>Messages/s</th><th>Received</th><th>Throttled</th><th>Refused</th><th>ACL denied</th><th>Expires</th><th>Features</th><th></th></tr></thead>
        <tbody>${(licenses ?? []).map((l) => html`<${LicenseRow} key=${l.id} l=${l} org=${orgName(l.organizationId)} app=${appName(l.applicationId)} onChanged=${load} />`)}</tbody>
      </table>
      ${licenses && licenses.length === 0 && html`<p class="muted">No licences: tenants without one have no limits.</p>`}
    </section>
  </div>`;
}

function LicenseRow({ l, org, app, onChanged }) {
  const [error, setError] = useState(null);
  const [changing, setChanging] = useState(false);
  const u = l.usage ?? {};
  const id = encodeURIComponent(l.id);
  const act = (method, body, what) => attempt(what, setError, () => /** @type {any} */ (v1Write)(method, '/licenses/{id}', body, { id }), onChanged);
  async function change(e) {
    e.preventDefault();
    const f = new FormData(e.target);
    const body = { maxConnections: limitOf(f, 'maxConnections'), maxMessageRate: limitOf(f, 'maxMessageRate'), expires: expiresOf(f), features: featuresOf(f), description: String(f.get('description')).trim() };
    if (await act('PUT', body, 'change')) setChanging(false);
  }
  const expired = l.expires !== null && Date.parse(l.expires) <= Date.now();
  return html`<tr data-license=${`${org}/${app}`}>
    <td>${org}<br /><span class="muted">${app}</span></td>
    <td class="usage" data-testid="connections">${against(u.connections ?? 0, u.maxConnections, u.connectionsUsage)}</td>
    <td class="usage" data-testid="rate">${against(u.messageRate ?? 0, u.maxMessageRate, u.messageRateUsage)}</td>
    <td>${u.messagesReceived ?? 0}</td><td>${u.throttled ?? 0}</td><td>${u.quotaRefused ?? 0}</td><td>${u.aclDenied ?? 0}</td>
    <td>${l.expires ? `${when(l.expires)}${expired ? ' (expired)' : ''}` : 'never'}</td>
    <td>${l.features.join(', ')}</td>
    <td><button onClick=${() => setChanging(!changing)} aria-expanded=${changing ? 'true' : 'false'}>Change</button>
      <button class="danger" onClick=${() => act('DELETE', {}, 'withdraw')}>Withdraw</button>
      ${error && !changing && html`<span class="error" role="alert">${error}</span>`}</td>
  </tr>${changing && html`<tr><td colspan="10">
    <form class="inline" onSubmit=${change} aria-label=${`change the licence of ${org}/${app}`}>
      <label>Max connections <input name="maxConnections" type="number" min="0" defaultValue=${l.maxConnections ?? ''} placeholder="no limit" /></label>
      <label>Max messages/s <input name="maxMessageRate" type="number" min="1" defaultValue=${l.maxMessageRate ?? ''} placeholder="no limit" /></label>
      <label>Expires <input name="expires" type="datetime-local" defaultValue=${localInput(l.expires)} /></label>
      <label>Features <input name="features" autocomplete="off" defaultValue=${l.features.join(', ')} placeholder="comma separated" /></label>
      <label>Description <input name="description" autocomplete="off" defaultValue=${l.description} /></label>
      <button type="submit">Save</button>
      <button type="button" onClick=${() => { setChanging(false); setError(null); }}>Cancel</button>
      ${error && html`<p class="error" role="alert">${error}</p>`}
    </form></td></tr>`}`;
}

function AddLicense({ orgs, apps, onAdded }) {
  const [org, setOrg] = useState('');
  const [error, setError] = useState(null);
  const organizationId = org || orgs[0]?.id || '';
  const orgApps = apps.filter((a) => a.organizationId === organizationId);
  async function submit(e) {
    e.preventDefault();
    const form = e.target;
    const f = new FormData(form);
    const body = { organizationId, maxConnections: limitOf(f, 'maxConnections'), maxMessageRate: limitOf(f, 'maxMessageRate'), expires: expiresOf(f), features: featuresOf(f) };
    const app = String(f.get('applicationId') ?? '');
    if (app) body.applicationId = app;
    const description = String(f.get('description')).trim();
    if (description) body.description = description;
    try {
      await v1Write('POST', '/licenses', body);
      setError(null);
      for (const k of ['maxConnections', 'maxMessageRate', 'expires', 'features', 'description']) form.elements[k].value = '';
      await onAdded();
    } catch (err) {
      setError(errText('add', err));
    }
  }
  return html`<form class="card inline" onSubmit=${submit} aria-label="add a licence">
    <label>Organization <select name="organizationId" value=${organizationId} onChange=${(e) => setOrg(e.target.value)} required>
      ${orgs.map((o) => html`<option value=${o.id}>${o.name}</option>`)}</select></label>
    <label>Application <select name="applicationId"><option value="">whole organization</option>
      ${orgApps.map((a) => html`<option value=${a.id}>${a.name}</option>`)}</select></label>
    <label>Max connections <input name="maxConnections" type="number" min="0" placeholder="no limit" /></label>
    <label>Max messages/s <input name="maxMessageRate" type="number" min="1" placeholder="no limit" /></label>
    <label>Expires <input name="expires" type="datetime-local" /></label>
    <label>Features <input name="features" autocomplete="off" placeholder="comma separated" /></label>
    <label>Description <input name="description" autocomplete="off" /></label>
    <button type="submit" disabled=${orgs.length === 0}>Add licence</button>
    ${error && html`<p class="error" role="alert">${error}</p>`}
  </form>`;
}
