// Users of the control platform (/api/v1/users): SystemAdmins (the admin API's admins) and the
// tenant users (OrganizationAdmin, ProjectAdmin, User) of an organization and, for some, a
// project. List, add, change role (with organization and project), change e-mail or password,
// delete. The admin API's
// viewers have no platform role and are not listed here (the Users page has them).
import { h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';

import { attempt, errText } from '../forms.js';
import { NO_PLATFORM_ROLE, platformUser, v1All, v1Write, when } from '../platform.js';

const html = htm.bind(h);
const ROLES = ['SystemAdmin', 'OrganizationAdmin', 'ProjectAdmin', 'User'];

export function PlatformUsers({ user }) {
  const [users, setUsers] = useState(null);
  const [orgs, setOrgs] = useState([]);
  const [projects, setProjects] = useState([]);
  const [error, setError] = useState(null);
  async function load() {
    try {
      const [u, o, p] = await Promise.all([v1All('/users'), v1All('/organizations'), v1All('/projects')]);
      setUsers(u);
      setOrgs(o);
      setProjects(p);
      setError(null);
    } catch (err) {
      setError(err.message);
    }
  }
  useEffect(() => {
    if (platformUser(user)) void load();
  }, []);
  if (!platformUser(user)) return html`<div><h2>Platform users</h2><p class="muted">${NO_PLATFORM_ROLE}</p></div>`;
  const orgName = (id) => (id === null ? '' : orgs.find((o) => o.id === id)?.name ?? id);
  const projectName = (id) => (id === null ? '' : projects.find((p) => p.id === id)?.name ?? id);
  return html`<div>
    <h2>Platform users</h2>
    <p class="muted">Users of the control platform API (<code>/api/v1</code>). A SystemAdmin is an admin of this console; tenant users belong to an organization (and a ProjectAdmin, or a User, to a project) and sign in to <code>/api/v1</code> only.</p>
    <${AddUser} orgs=${orgs} projects=${projects} onAdded=${load} />
    ${error && html`<p class="error" role="alert">${error}</p>`}
    <section class="card" aria-label="platform users">
      <h3>Users</h3>
      <table>
        <thead><tr><th>Username</th><th>E-mail</th><th>Role</th><th>Organization</th><th>Project</th><th>Created</th><th></th></tr></thead>
        <tbody>${(users ?? []).map((u) => html`<${UserRow} key=${u.id} u=${u} self=${u.username === user.username} orgs=${orgs} projects=${projects}
          org=${orgName(u.organizationId)} project=${projectName(u.projectId)} onChanged=${load} />`)}</tbody>
      </table>
      ${users && users.length === 0 && html`<p class="muted">No platform users.</p>`}
    </section>
  </div>`;
}

/** Role, organization and project: the organization and project only where the role has them. */
function Placement({ orgs, projects, role, setRole, org, setOrg, project, setProject, label = '' }) {
  const orgProjects = projects.filter((p) => p.organizationId === org);
  return html`
    <label>${label}Role <select name="role" value=${role} onChange=${(e) => setRole(e.target.value)}>${ROLES.map((r) => html`<option>${r}</option>`)}</select></label>
    ${role !== 'SystemAdmin' && html`<label>${label}Organization <select name="organizationId" value=${org} onChange=${(e) => { setOrg(e.target.value); setProject(''); }} required>
      <option value="">choose…</option>${orgs.map((o) => html`<option value=${o.id}>${o.name}</option>`)}</select></label>`}
    ${(role === 'ProjectAdmin' || role === 'User') && html`<label>${label}Project <select name="projectId" value=${project} onChange=${(e) => setProject(e.target.value)}>
      <option value="">${role === 'User' ? 'none (the whole organization)' : 'choose…'}</option>${orgProjects.map((p) => html`<option value=${p.id}>${p.name}</option>`)}</select></label>`}`;
}

function placementBody(role, org, project) {
  if (role === 'SystemAdmin') return { role };
  const body = { role, organizationId: org || null };
  if (role === 'ProjectAdmin' || role === 'User') body.projectId = project || null;
  return body;
}

function AddUser({ orgs, projects, onAdded }) {
  const [role, setRole] = useState('OrganizationAdmin');
  const [org, setOrg] = useState('');
  const [project, setProject] = useState('');
  const [error, setError] = useState(null);
  async function submit(e) {
    e.preventDefault();
    const form = e.target;
    const f = new FormData(form);
    /** @type {Record<string, any>} */
    const body = { username: String(f.get('username')).trim(), password: String(f.get('password')), ...placementBody(role, org, project) };
    const email = String(f.get('email')).trim();
    if (email) body.email = email;
    try {
      await v1Write('POST', '/users', body);
      setError(null);
      for (const k of ['username', 'password', 'email']) form.elements[k].value = '';
      await onAdded();
    } catch (err) {
      setError(errText('add', err));
    }
  }
  return html`<form class="card inline" onSubmit=${submit} aria-label="add a platform user">
    <label>Username <input name="username" required autocomplete="off" /></label>
    <label>Password <input name="password" type="password" required autocomplete="new-password" /></label>
    <label>E-mail <input name="email" type="email" autocomplete="off" placeholder="optional" /></label>
    <${Placement} orgs=${orgs} projects=${projects} role=${role} setRole=${setRole} org=${org} setOrg=${setOrg} project=${project} setProject=${setProject} />
    <button type="submit">Add user</button>
    ${error && html`<p class="error" role="alert">${error}</p>`}
  </form>`;
}

function UserRow({ u, self, orgs, projects, org, project, onChanged }) {
  const [error, setError] = useState(null);
  const [changing, setChanging] = useState(/** @type {false | 'role' | 'account'} */ (false));
  const [role, setRole] = useState(u.role);
  const [orgId, setOrgId] = useState(u.organizationId ?? '');
  const [projectId, setProjectId] = useState(u.projectId ?? '');
  const id = encodeURIComponent(u.id);
  const act = (method, body, what) => attempt(what, setError, () => /** @type {any} */ (v1Write)(method, '/users/{id}', body, { id }), onChanged);
  function open(what) {
    setRole(u.role);
    setOrgId(u.organizationId ?? '');
    setProjectId(u.projectId ?? '');
    setError(null);
    setChanging(changing === what ? false : what);
  }
  async function save(e) {
    e.preventDefault();
    if (await act('PUT', placementBody(role, orgId, projectId), 'change role')) setChanging(false);
  }
  async function saveAccount(e) {
    e.preventDefault();
    const f = new FormData(e.target);
    const body = { email: String(f.get('email')).trim() };
    const password = String(f.get('password'));
    if (password !== '') body.password = password;
    if (await act('PUT', body, 'change')) setChanging(false);
  }
  return html`<tr data-platform-user=${u.username}>
    <td>${u.username}${self ? ' (you)' : ''}</td><td>${u.email}</td><td class="role">${u.role}</td><td>${org}</td><td>${project}</td><td>${when(u.createTime)}</td>
    <td><button onClick=${() => open('role')} aria-expanded=${changing === 'role' ? 'true' : 'false'}>Change role</button>
      <button onClick=${() => open('account')} aria-expanded=${changing === 'account' ? 'true' : 'false'}>Change e-mail or password</button>
      <button class="danger" onClick=${() => act('DELETE', {}, `delete ${u.username}`)}>Delete</button>
      ${error && !changing && html`<span class="error" role="alert">${error}</span>`}</td>
  </tr>${changing === 'account' && html`<tr><td colspan="7">
    <form class="inline" onSubmit=${saveAccount} aria-label=${`change the e-mail or password of ${u.username}`}>
      <label>E-mail <input name="email" type="email" autocomplete="off" defaultValue=${u.email ?? ''} /></label>
      <label>New password <input name="password" type="password" autocomplete="new-password" placeholder="unchanged" /></label>
      <button type="submit">Save</button>
      <button type="button" onClick=${() => { setChanging(false); setError(null); }}>Cancel</button>
      <span class="muted">A new password ends the user's sign-ins (their tokens).</span>
      ${error && html`<p class="error" role="alert">${error}</p>`}
    </form></td></tr>`}${changing === 'role' && html`<tr><td colspan="7">
    <form class="inline" onSubmit=${save} aria-label=${`change the role of ${u.username}`}>
      <${Placement} orgs=${orgs} projects=${projects} role=${role} setRole=${setRole} org=${orgId} setOrg=${setOrgId} project=${projectId} setProject=${setProjectId} />
      <button type="submit">Save</button>
      <button type="button" onClick=${() => { setChanging(false); setError(null); }}>Cancel</button>
      ${error && html`<p class="error" role="alert">${error}</p>`}
    </form></td></tr>`}`;
}
