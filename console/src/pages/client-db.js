// The built-in client database: roles (ordered ACL rules, one per line), clients (password,
// client id binding, enabled, roles, TLS-PSK key), the anonymous roles and default access, and an import of a
// Mosquitto dynamic-security.json. Viewers see the lists without the buttons that change things.
import { h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';

import { api } from '../api.js';
import { attempt, parseObject } from '../forms.js';

const html = htm.bind(h);
const ACTIONS = ['publish', 'subscribe', 'all', 'subscribe-filter'];

/** "allow publish devices/%u/#" per line (a trailing "literal" for a literal subscribe-filter). */
export function parseRules(text) {
  return text.split('\n').map((l) => l.trim()).filter(Boolean).map((line, i) => {
    const [permission, action, topic, literal, ...rest] = line.split(/\s+/);
    const bad = (why) => {
      const e = /** @type {Error & { field?: string }} */ (new Error(`line ${i + 1}: ${why} (write: allow|deny ${ACTIONS.join('|')} <topic filter> [literal])`));
      e.field = 'rules';
      return e;
    };
    if (permission !== 'allow' && permission !== 'deny') throw bad(`${permission} is not allow or deny`);
    if (!ACTIONS.includes(action)) throw bad(`${action ?? 'nothing'} is not an action`);
    if (!topic) throw bad('no topic');
    if (rest.length > 0 || (literal !== undefined && literal !== 'literal')) throw bad('too many words');
    return literal ? { action, permission, topic, literal: true } : { action, permission, topic };
  });
}

const ruleText = (r) => `${r.permission} ${r.action} ${r.topic}${r.literal ? ' literal' : ''}`;
/** How a client can sign in: its password hash's kind and its SCRAM mechanisms. */
const signInText = (c) => [c.passwordType === 'none' ? '' : `password (${c.passwordType})`, ...(c.scramMechanisms ?? [])].filter(Boolean).join(', ') || 'none';
const roleRefs = (text) => text.split(',').map((s) => s.trim()).filter(Boolean).map((name) => ({ name }));

export function ClientDb({ user }) {
  const [clients, setClients] = useState([]);
  const [roles, setRoles] = useState([]);
  const [settings, setSettings] = useState(null);
  const [error, setError] = useState(null);
  const [note, setNote] = useState(null);
  const canWrite = user.role === 'admin';
  async function load() {
    try {
      const [c, r, s] = await Promise.all([api('GET', '/api/client-db/clients', undefined, { query: { page: 1, size: 1000 } }), api('GET', '/api/client-db/roles'), api('GET', '/api/client-db/settings')]);
      setClients(c.data);
      setRoles(r.data);
      setSettings(s.data);
      setError(null);
    } catch (err) {
      setError(err.message);
    }
  }
  useEffect(() => {
    void load();
  }, []);
  const act = (method, path, body, what) => attempt(what, setError, () => /** @type {any} */ (api)(method, path, body), load);

  async function addRole(e) {
    e.preventDefault();
    const form = e.target;
    const f = new FormData(form);
    let rules;
    try {
      rules = parseRules(f.get('rules'));
    } catch (err) {
      setError(`add role: ${err.message}`);
      return;
    }
    const description = f.get('description');
    if (await act('POST', '/api/client-db/roles', { name: f.get('name'), rules, ...(description ? { description } : {}) }, 'add role')) form.reset();
  }
  async function editRole(role) {
    const text = window.prompt(`Rules of ${role.name}, one per line or separated by ";"`, role.rules.map(ruleText).join('; '));
    if (text === null) return;
    let rules;
    try {
      rules = parseRules(text.replaceAll(';', '\n'));
    } catch (err) {
      setError(`${role.name}: ${err.message}`);
      return;
    }
    await act('PUT', `/api/client-db/roles/${encodeURIComponent(role.name)}`, { rules }, role.name);
  }
  async function addClient(e) {
    e.preventDefault();
    const form = e.target;
    const f = new FormData(form);
    const body = { username: f.get('username'), password: f.get('password'), roles: roleRefs(f.get('roles')) };
    if (f.get('clientId')) body.clientId = f.get('clientId');
    if (f.get('textName')) body.textName = f.get('textName');
    if (f.get('pskKey')) body.pskKey = String(f.get('pskKey')).trim();
    if (await act('POST', '/api/client-db/clients', body, 'add client')) form.reset();
  }
  const clientPath = (c, kick) => `/api/client-db/clients/${encodeURIComponent(c.username)}${kick ? '?kick=true' : ''}`;
  async function password(c) {
    const p = window.prompt(`New password for ${c.username}`);
    if (p) await act('PUT', clientPath(c), { password: p }, c.username);
  }
  async function pskKey(c) {
    const k = window.prompt(`TLS-PSK key of ${c.username} in hex (empty: none)`);
    if (k === null) return;
    await act('PUT', clientPath(c), { pskKey: k.trim() === '' ? null : k.trim() }, c.username);
  }
  async function setClientRoles(c) {
    const text = window.prompt(`Roles of ${c.username}, in order, separated by ","`, c.roles.map((r) => r.name).join(', '));
    if (text !== null) await act('PUT', clientPath(c), { roles: roleRefs(text) }, c.username);
  }
  async function saveSettings(e) {
    e.preventDefault();
    const f = new FormData(e.target);
    const anon = String(f.get('anonymous')).trim();
    const defaultAccess = {};
    for (const k of ['publish', 'subscribe', 'subscribeFilter']) if (f.get(k)) defaultAccess[k] = f.get(k);
    await act('PUT', '/api/client-db/settings', { anonymousRoles: anon === '' ? null : anon.split(',').map((s) => s.trim()).filter(Boolean), defaultAccess }, 'settings');
  }
  async function importMosquitto(e) {
    e.preventDefault();
    const form = e.target;
    const f = new FormData(form);
    let config;
    try {
      config = parseObject(f.get('config'), 'dynamic-security.json');
    } catch (err) {
      setError(`import: ${err.field}: ${err.message}`);
      return;
    }
    const answer = await act('POST', '/api/client-db/import/mosquitto', { mode: f.get('mode'), config }, 'import');
    if (answer) {
      const d = answer.data;
      setNote(`Imported ${d.clients} clients and ${d.roles} roles${d.skipped.length ? `; skipped: ${d.skipped.join('; ')}` : ''}`);
      form.reset();
    }
  }

  return html`<div>
    <h2>Client database</h2>
    <p class="muted">MQTT clients and roles managed here sign in and are authorized before the policies and the configuration's users (see docs/features/client-db.md).</p>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    ${note && html`<p class="muted" role="status">${note}</p>`}
    <h3>Roles</h3>
    ${canWrite && html`<form class="card" onSubmit=${addRole} aria-label="add a role">
      <label>Name <input name="name" required autocomplete="off" /></label>
      <label>Description <input name="description" autocomplete="off" /></label>
      <label>Rules (one per line: allow|deny publish|subscribe|all|subscribe-filter topic)
        <textarea name="rules" rows="4" placeholder="allow publish devices/%u/#"></textarea></label>
      <button type="submit">Add role</button>
    </form>`}
    <section class="card">
      <table aria-label="roles">
        <thead><tr><th>Name</th><th>Rules, in order</th><th>Description</th><th></th></tr></thead>
        <tbody>${roles.map((r) => html`<tr key=${r.name} data-role=${r.name}>
          <td>${r.name}</td>
          <td><ol class="rules">${r.rules.map((rule, i) => html`<li key=${i}><code>${ruleText(rule)}</code></li>`)}</ol></td>
          <td>${r.description ?? ''}</td>
          <td>${canWrite && html`<button onClick=${() => editRole(r)}>Rules</button>
            <button class="danger" onClick=${() => act('DELETE', `/api/client-db/roles/${encodeURIComponent(r.name)}`, {}, r.name)}>Delete</button>`}</td>
        </tr>`)}</tbody>
      </table>
    </section>
    <h3>Clients</h3>
    ${canWrite && html`<form class="card inline" onSubmit=${addClient} aria-label="add a client">
      <label>Username <input name="username" required autocomplete="off" /></label>
      <label>Password <input name="password" type="password" required autocomplete="new-password" /></label>
      <label>Client id (optional) <input name="clientId" autocomplete="off" /></label>
      <label>Name (optional) <input name="textName" autocomplete="off" /></label>
      <label>Roles (comma-separated) <input name="roles" autocomplete="off" /></label>
      <label>TLS-PSK key, hex (optional) <input name="pskKey" autocomplete="off" spellcheck="false" /></label>
      <button type="submit">Add client</button>
      <p class="muted">The password is stored as an argon2id hash and as SCRAM-SHA-256 and SCRAM-SHA-512 credentials (salted keys) made from it, for MQTT 5 SCRAM sign-in; never in plain. Setting it again remakes both.</p>
    </form>`}
    <section class="card">
      <table aria-label="clients">
        <thead><tr><th>Username</th><th>Client id</th><th>Roles</th><th>Enabled</th><th>Name</th><th>Sign-in</th><th>PSK key</th><th></th></tr></thead>
        <tbody>${clients.map((c) => html`<tr key=${c.username} data-client=${c.username}>
          <td>${c.username}</td>
          <td>${c.clientId ?? ''}</td>
          <td>${c.roles.map((r) => r.name).join(', ')}</td>
          <td>${canWrite
            ? html`<input type="checkbox" aria-label=${`${c.username} enabled`} checked=${c.enabled} onChange=${(e) => act('PUT', clientPath(c, !e.target.checked), { enabled: e.target.checked }, c.username)} />`
            : c.enabled ? 'yes' : 'no'}</td>
          <td>${c.textName ?? ''}</td>
          <td data-signin>${signInText(c)}</td>
          <td>${c.hasPskKey ? 'set' : '–'}</td>
          <td>${canWrite && html`<button onClick=${() => password(c)}>Password</button>
            <button onClick=${() => pskKey(c)}>PSK key</button>
            <button onClick=${() => setClientRoles(c)}>Roles</button>
            <button class="danger" onClick=${() => act('DELETE', clientPath(c, true), {}, c.username)}>Delete and disconnect</button>`}</td>
        </tr>`)}</tbody>
      </table>
    </section>
    ${settings && html`<h3>Anonymous clients and default access</h3>
    <form class="card inline" onSubmit=${saveSettings} aria-label="settings">
      <label>Anonymous roles (comma-separated; empty: none) <input name="anonymous" disabled=${!canWrite} defaultValue=${settings.anonymousRoles?.join(', ') ?? ''} /></label>
      ${['publish', 'subscribe', 'subscribeFilter'].map((k) => html`<label key=${k}>Default ${k}
        <select name=${k} disabled=${!canWrite}>
          ${['', 'allow', 'deny'].map((v) => html`<option value=${v} selected=${(settings.defaultAccess[k] ?? '') === v}>${v || 'next ACL decides'}</option>`)}</select></label>`)}
      ${canWrite && html`<button type="submit">Save</button>`}
    </form>`}
    ${canWrite && html`<h3>Import a Mosquitto dynamic-security.json</h3>
    <form class="card" onSubmit=${importMosquitto} aria-label="import from Mosquitto">
      <label>Mode <select name="mode"><option>merge</option><option>replace</option></select></label>
      <label>dynamic-security.json <textarea name="config" rows="6" required></textarea></label>
      <button type="submit">Import</button>
    </form>`}
  </div>`;
}
