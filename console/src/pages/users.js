// Users of the admin API (and of this console): list, add, change role or password, delete.
// Viewers see the list and may change their own password.
import { h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';

import { api } from '../api.js';
import { attempt } from '../forms.js';

const html = htm.bind(h);

export function Users({ user }) {
  const [users, setUsers] = useState([]);
  const [error, setError] = useState(null);
  const canWrite = user.role === 'admin';
  async function load() {
    try {
      setUsers((await api('GET', '/api/users')).data);
      setError(null);
    } catch (err) {
      setError(err.message);
    }
  }
  useEffect(() => {
    void load();
  }, []);
  const act = (path, body, what) => attempt(what, setError, () => api('POST', path, body), load);
  async function add(e) {
    e.preventDefault();
    const form = e.target;
    const f = new FormData(form);
    if (await act('/api/users/add', { username: f.get('username'), password: f.get('password'), role: f.get('role') }, 'add')) form.reset();
  }
  async function password(username) {
    const p = window.prompt(`New password for ${username} (at least 8 characters)`);
    if (p !== null) await act('/api/users/password', { username, password: p }, username);
  }
  return html`<div>
    <h2>Users</h2>
    ${canWrite && html`<form class="card inline" onSubmit=${add} aria-label="add a user">
      <label>Username <input name="username" required autocomplete="off" /></label>
      <label>Password <input name="password" type="password" required minlength="8" autocomplete="new-password" /></label>
      <label>Role <select name="role"><option>viewer</option><option>admin</option></select></label>
      <button type="submit">Add user</button>
    </form>`}
    ${error && html`<p class="error" role="alert">${error}</p>`}
    <section class="card">
      <table>
        <thead><tr><th>Username</th><th>Role</th><th>Created</th><th></th></tr></thead>
        <tbody>${users.map((u) => html`<tr key=${u.username} data-user=${u.username}>
          <td>${u.username}</td>
          <td>${canWrite
            ? html`<select aria-label=${`role of ${u.username}`} value=${u.role} onChange=${(e) => act('/api/users/role', { username: u.username, role: e.target.value }, u.username)}>
                <option>admin</option><option>viewer</option></select>`
            : u.role}</td>
          <td>${u.createTime ? new Date(u.createTime).toLocaleString() : ''}</td>
          <td>${(canWrite || u.username === user.username) && html`<button onClick=${() => password(u.username)}>Password</button>`}
            ${canWrite && html`<button class="danger" onClick=${() => act('/api/users/delete', { username: u.username }, u.username)}>Delete</button>`}</td>
        </tr>`)}</tbody>
      </table>
    </section>
  </div>`;
}
