// Tenants of the control platform (/api/v1): organizations (list, add, change, delete), and for
// the organization picked, its projects (list, add, change, delete) and applications (list, add,
// change its name, description or namespace, enable, disable, rotate the secret, delete). An application's appKey and appSecret (its MQTT
// username and password) are shown once, when it is made or its secret rotated: the server keeps
// only the secret's hash.
import { h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';

import { attempt, errText } from '../forms.js';
import { NO_PLATFORM_ROLE, platformUser, v1All, v1Write, when } from '../platform.js';

const html = htm.bind(h);

export function Tenants({ user }) {
  const [orgs, setOrgs] = useState(null);
  const [picked, setPicked] = useState(null);
  const [error, setError] = useState(null);
  async function load() {
    try {
      const list = await v1All('/organizations');
      setOrgs(list);
      setError(null);
      setPicked((p) => (p && list.some((o) => o.id === p) ? p : list[0]?.id ?? null));
    } catch (err) {
      setError(err.message);
    }
  }
  useEffect(() => {
    if (platformUser(user)) void load();
  }, []);
  if (!platformUser(user)) return html`<div><h2>Tenants</h2><p class="muted">${NO_PLATFORM_ROLE}</p></div>`;
  const org = orgs?.find((o) => o.id === picked) ?? null;
  return html`<div>
    <h2>Tenants</h2>
    <${AddOrganization} onAdded=${async (o) => { await load(); setPicked(o.id); }} />
    ${error && html`<p class="error" role="alert">${error}</p>`}
    <section class="card" aria-label="organizations">
      <h3>Organizations</h3>
      <table>
        <thead><tr><th>Name</th><th>Display name</th><th>Connections</th><th>Created</th><th></th></tr></thead>
        <tbody>${(orgs ?? []).map((o) => html`<${OrganizationRow} key=${o.id} o=${o} picked=${o.id === picked} onPick=${() => setPicked(o.id)} onChanged=${load} />`)}</tbody>
      </table>
      ${orgs && orgs.length === 0 && html`<p class="muted">No organizations.</p>`}
    </section>
    ${org && html`<${Organization} key=${org.id} org=${org} onChanged=${load} />`}
  </div>`;
}

function AddOrganization({ onAdded }) {
  const [error, setError] = useState(null);
  async function submit(e) {
    e.preventDefault();
    const form = e.target;
    const f = new FormData(form);
    const body = { name: String(f.get('name')).trim() };
    const display = String(f.get('displayName')).trim();
    if (display) body.displayName = display;
    try {
      const r = await v1Write('POST', '/organizations', body);
      setError(null);
      form.reset();
      await onAdded(r.data);
    } catch (err) {
      setError(errText('add', err));
    }
  }
  return html`<form class="card inline" onSubmit=${submit} aria-label="add an organization">
    <label>Name <input name="name" required autocomplete="off" placeholder="acme" /></label>
    <label>Display name <input name="displayName" autocomplete="off" placeholder="optional" /></label>
    <button type="submit">Add organization</button>
    ${error && html`<p class="error" role="alert">${error}</p>`}
  </form>`;
}

function OrganizationRow({ o, picked, onPick, onChanged }) {
  const [error, setError] = useState(null);
  const [hasProjects, setHasProjects] = useState(false);
  async function remove(cascade) {
    try {
      await v1Write('DELETE', '/organizations/{id}', {}, { id: o.id }, cascade ? { cascade: true } : undefined);
      setError(null);
      await onChanged();
    } catch (err) {
      setError(errText('delete', err));
      if (err.status === 409) setHasProjects(true);
    }
  }
  return html`<tr data-org=${o.name} aria-selected=${picked ? 'true' : 'false'}>
    <td><button class="link" aria-pressed=${picked ? 'true' : 'false'} onClick=${onPick}>${o.name}</button></td>
    <td>${o.displayName ?? ''}</td>
    <td>${o.usage?.connections ?? 0}${o.usage?.maxConnections != null ? ` of ${o.usage.maxConnections}` : ''}</td>
    <td>${when(o.createTime)}</td>
    <td><button class="danger" onClick=${() => remove(false)}>Delete</button>
      ${hasProjects && html`<button class="danger" onClick=${() => remove(true)}>Delete with its projects</button>`}
      ${error && html`<span class="error" role="alert">${error}</span>`}</td>
  </tr>`;
}

/** One organization: its projects and applications. */
function Organization({ org, onChanged }) {
  const [projects, setProjects] = useState([]);
  const [changing, setChanging] = useState(null);
  const [changingApp, setChangingApp] = useState(null);
  const [apps, setApps] = useState([]);
  const [error, setError] = useState(null);
  const [created, setCreated] = useState(null);
  async function load() {
    try {
      const [p, a] = await Promise.all([v1All('/projects', { organizationId: org.id }), v1All('/applications', { organizationId: org.id })]);
      setProjects(p);
      setApps(a);
      setError(null);
    } catch (err) {
      setError(err.message);
    }
  }
  useEffect(() => {
    void load();
  }, []);
  const act = (method, path, body, what) => attempt(what, setError, () => /** @type {any} */ (v1Write)(method, path, body), load);
  async function addProject(e) {
    e.preventDefault();
    const form = e.target;
    const name = String(new FormData(form).get('name')).trim();
    if (await act('POST', '/projects', { organizationId: org.id, name }, 'add project')) form.reset();
  }
  async function addApp(e) {
    e.preventDefault();
    const form = e.target;
    const f = new FormData(form);
    const body = { projectId: f.get('projectId'), name: String(f.get('name')).trim() };
    const ns = String(f.get('namespace')).trim();
    if (ns) body.namespace = ns;
    const r = await act('POST', '/applications', body, 'add application');
    if (r) {
      form.reset();
      setCreated(r.data);
    }
  }
  async function rotate(a) {
    const r = await act('POST', `/applications/${encodeURIComponent(a.id)}/rotate-secret`, {}, `rotate the secret of ${a.name}`);
    if (r) setCreated({ ...r.data, rotated: true });
  }
  async function changeProject(e, p) {
    e.preventDefault();
    const f = new FormData(e.target);
    const body = { name: String(f.get('name')).trim(), description: String(f.get('description')).trim() };
    if (await act('PUT', `/projects/${encodeURIComponent(p.id)}`, body, `change ${p.name}`)) setChanging(null);
  }
  const projectName = (id) => projects.find((p) => p.id === id)?.name ?? id;
  return html`<section class="card" aria-label=${`organization ${org.name}`}>
    <h3>${org.name}: projects and applications</h3>
    <${ChangeOrganization} org=${org} onChanged=${onChanged} />
    <form class="inline" onSubmit=${addProject} aria-label="add a project">
      <label>Project name <input name="name" required autocomplete="off" placeholder="plant-1" /></label>
      <button type="submit">Add project</button>
    </form>
    <form class="inline" onSubmit=${addApp} aria-label="add an application">
      <label>Project <select name="projectId" required>${projects.map((p) => html`<option value=${p.id}>${p.name}</option>`)}</select></label>
      <label>Application name <input name="name" required autocomplete="off" placeholder="sensors" /></label>
      <label>Namespace <input name="namespace" class="wide" autocomplete="off" placeholder=${`${org.name}/<project>/<application>/#`} /></label>
      <button type="submit" disabled=${projects.length === 0}>Add application</button>
    </form>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    ${created && html`<div class="secret" role="status" aria-label="new application credentials">
      <p><b>${created.name}</b>: ${created.rotated ? 'its new MQTT credentials (the old secret is refused from now on; clients already connected stay connected).' : 'its MQTT credentials.'} The secret is shown this once; keep it now.</p>
      <dl>
        <dt>Username (appKey)</dt><dd><code data-testid="app-key">${created.appKey}</code></dd>
        <dt>Password (appSecret)</dt><dd><code data-testid="app-secret">${created.appSecret}</code></dd>
        <dt>Namespace</dt><dd><code>${created.namespace}</code></dd>
      </dl>
      <button onClick=${() => setCreated(null)}>I have kept it</button>
    </div>`}
    <h4>Projects</h4>
    <table>
      <thead><tr><th>Name</th><th>Applications</th><th>Created</th><th></th></tr></thead>
      <tbody>${projects.map((p) => html`<tr key=${p.id} data-project=${p.name}>
        <td>${p.name}</td><td>${apps.filter((a) => a.projectId === p.id).length}</td><td>${when(p.createTime)}</td>
        <td><button onClick=${() => setChanging(changing === p.id ? null : p.id)} aria-expanded=${changing === p.id ? 'true' : 'false'}>Change</button>
          <button class="danger" onClick=${() => act('DELETE', `/projects/${encodeURIComponent(p.id)}`, {}, `delete ${p.name}`)}>Delete</button></td>
      </tr>${changing === p.id && html`<tr key=${`${p.id}-change`}><td colspan="4">
        <form class="inline" onSubmit=${(e) => changeProject(e, p)} aria-label=${`change project ${p.name}`}>
          <label>Project name <input name="name" required autocomplete="off" defaultValue=${p.name} /></label>
          <label>Description <input name="description" class="wide" autocomplete="off" defaultValue=${p.description ?? ''} /></label>
          <button type="submit">Save</button>
          <button type="button" onClick=${() => setChanging(null)}>Cancel</button>
        </form></td></tr>`}`)}</tbody>
    </table>
    ${projects.length === 0 && html`<p class="muted">No projects: add one, then its applications.</p>`}
    <h4>Applications</h4>
    <table>
      <thead><tr><th>Name</th><th>Project</th><th>appKey</th><th>Namespace</th><th>State</th><th>Connections</th><th></th></tr></thead>
      <tbody>${apps.map((a) => html`<tr key=${a.id} data-app=${a.name}>
        <td>${a.name}</td><td>${projectName(a.projectId)}</td><td><code>${a.appKey}</code></td><td><code>${a.namespace}</code></td>
        <td>${a.enabled ? 'enabled' : 'disabled'}</td><td>${a.usage?.connections ?? 0}</td>
        <td><button onClick=${() => setChangingApp(changingApp === a.id ? null : a.id)} aria-expanded=${changingApp === a.id ? 'true' : 'false'}>Change</button>
          <button onClick=${() => act('PUT', `/applications/${encodeURIComponent(a.id)}`, { enabled: !a.enabled }, a.name)}>${a.enabled ? 'Disable' : 'Enable'}</button>
          <button onClick=${() => rotate(a)}>Rotate secret</button>
          <button class="danger" onClick=${() => act('DELETE', `/applications/${encodeURIComponent(a.id)}`, {}, `delete ${a.name}`)}>Delete</button></td>
      </tr>${changingApp === a.id && html`<tr key=${`${a.id}-change`}><td colspan="7">
        <${ChangeApplication} app=${a} onDone=${async (saved) => { setChangingApp(null); if (saved) await load(); }} /></td></tr>`}`)}</tbody>
    </table>
    ${apps.length === 0 && html`<p class="muted">No applications.</p>`}
  </section>`;
}

/** An organization's display name and description (its name is fixed). */
function ChangeOrganization({ org, onChanged }) {
  const [error, setError] = useState(null);
  const [saved, setSaved] = useState(false);
  async function submit(e) {
    e.preventDefault();
    const f = new FormData(e.target);
    try {
      await v1Write('PUT', '/organizations/{id}', { displayName: String(f.get('displayName')).trim(), description: String(f.get('description')).trim() }, { id: org.id });
      setError(null);
      setSaved(true);
      await onChanged();
    } catch (err) {
      setSaved(false);
      setError(errText('change', err));
    }
  }
  return html`<form class="inline" onSubmit=${submit} onInput=${() => setSaved(false)} aria-label="change the organization">
    <label>Display name <input name="displayName" autocomplete="off" defaultValue=${org.displayName ?? ''} /></label>
    <label>Description <input name="description" class="wide" autocomplete="off" defaultValue=${org.description ?? ''} /></label>
    <button type="submit">Save organization</button>
    <span role="status" class="muted">${saved ? 'saved' : ''}</span>
    ${error && html`<p class="error" role="alert">${error}</p>`}
  </form>`;
}

/** An application's name, description and namespace (moving the namespace disconnects its clients). */
function ChangeApplication({ app, onDone }) {
  const [error, setError] = useState(null);
  async function submit(e) {
    e.preventDefault();
    const f = new FormData(e.target);
    const body = { name: String(f.get('name')).trim(), description: String(f.get('description')).trim() };
    const ns = String(f.get('namespace')).trim();
    if (ns !== app.namespace) body.namespace = ns;
    try {
      await v1Write('PUT', '/applications/{id}', body, { id: app.id });
      setError(null);
      await onDone(true);
    } catch (err) {
      setError(errText(`change ${app.name}`, err));
    }
  }
  return html`<form class="inline" onSubmit=${submit} aria-label=${`change application ${app.name}`}>
    <label>Application name <input name="name" required autocomplete="off" defaultValue=${app.name} /></label>
    <label>Description <input name="description" class="wide" autocomplete="off" defaultValue=${app.description ?? ''} /></label>
    <label>Namespace <input name="namespace" class="wide" required autocomplete="off" defaultValue=${app.namespace} /></label>
    <button type="submit">Save</button>
    <button type="button" onClick=${() => onDone(false)}>Cancel</button>
    <span class="muted">A new namespace disconnects its clients: they connect again confined to it.</span>
    ${error && html`<p class="error" role="alert">${error}</p>`}
  </form>`;
}
