// @ts-check
// The Spindle web console: sign-in, then a page per module of the admin API (registry.js), in the
// grouped navigation of nav.js. Each page keyboard-usable; every API error shown where the user acted.
import { h, render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';

import { api } from './api.js';
import { Live } from './live.js';
import { Nav } from './nav.js';
import { PAGES } from './registry.js';
import './style.css';

const html = htm.bind(h);

/** @param {string} hash */
function pageOf(hash) {
  // The first segment names the page; a page may read the rest (#/clients/{clientId}).
  const id = hash.replace(/^#\/?/, '').split('/')[0];
  return PAGES.find((p) => p.id === id) ?? PAGES[0];
}

function SignIn({ onIn }) {
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  async function submit(e) {
    e.preventDefault();
    const form = new FormData(e.target);
    setBusy(true);
    setError(null);
    try {
      await api('POST', '/public/login', { username: String(form.get('username')), password: String(form.get('password')), cookie: true });
      onIn();
    } catch (err) {
      setError(err.message);
    } finally {
      setBusy(false);
    }
  }
  return html`<main class="signin">
    <form onSubmit=${submit} class="card" aria-labelledby="signin-title">
      <h1 id="signin-title">Spindle</h1>
      <label>Username <input name="username" autocomplete="username" required value="admin" /></label>
      <label>Password <input name="password" type="password" autocomplete="current-password" required autofocus /></label>
      ${error && html`<p class="error" role="alert">${error}</p>`}
      <button type="submit" disabled=${busy}>Sign in</button>
    </form>
  </main>`;
}

function App() {
  const [user, setUser] = useState(undefined);
  const [page, setPage] = useState(pageOf(location.hash));
  const [live] = useState(() => new Live());
  useEffect(() => {
    const onHash = () => setPage(pageOf(location.hash));
    window.addEventListener('hashchange', onHash);
    return () => window.removeEventListener('hashchange', onHash);
  }, []);
  async function whoami() {
    try {
      setUser((await api('GET', '/api/session')).data);
    } catch {
      setUser(null);
    }
  }
  useEffect(() => {
    void whoami();
  }, []);
  useEffect(() => {
    if (!user) return undefined;
    live.start();
    return () => live.stop();
  }, [user]);
  async function signOut() {
    await api('POST', '/public/logout', {}).catch(() => undefined);
    setUser(null);
  }
  if (user === undefined) return html`<main class="signin"><p>Loading…</p></main>`;
  if (user === null) return html`<${SignIn} onIn=${whoami} />`;
  const View = page.page;
  return html`<div class="layout">
    <header>
      <strong>Spindle</strong>
      <span class="who">${user.username} (${user.role}) <button class="link" onClick=${signOut}>Sign out</button></span>
    </header>
    <div class="body">
      <${Nav} current=${page} />
      <main><${View} key=${page.id} live=${live} user=${user} /></main>
    </div>
  </div>`;
}

render(html`<${App} />`, /** @type {HTMLElement} */ (document.getElementById('app')));
