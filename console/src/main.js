// The Spindle web console: sign-in, then a page per module of the admin API (PAGES). Pages for
// modules that exist only; each keyboard-usable; every API error shown where the user acted.
import { h, render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';

import { api } from './api.js';
import { Live } from './live.js';
import { Overview } from './pages/overview.js';
import { Endpoints } from './pages/endpoints.js';
import { Limits } from './pages/limits.js';
import { Connections } from './pages/connections.js';
import { Messages } from './pages/publish.js';
import { Rules } from './pages/rules.js';
import { Sources } from './pages/sources.js';
import { Scripts } from './pages/scripts.js';
import { Commands } from './pages/commands.js';
import { Policies } from './pages/policies.js';
import { ClientDb } from './pages/client-db.js';
import { Topics } from './pages/topics.js';
import { Users } from './pages/users.js';
import { Cluster } from './pages/cluster.js';
import { Tenants } from './pages/tenants.js';
import { Alerts } from './pages/alerts.js';
import { Channels } from './pages/channels.js';
import { Licenses } from './pages/licenses.js';
import { PlatformUsers } from './pages/platform-users.js';
import { Audit } from './pages/audit.js';
import { LiveMessages } from './pages/live-messages.js';
import { Logs } from './pages/logs.js';
import { Banned } from './pages/banned.js';
import { Sparkplug } from './pages/sparkplug.js';
import { Rewrite } from './pages/rewrite.js';
import { Schemas } from './pages/schemas.js';
import { Delayed } from './pages/delayed.js';
import { TopicMetrics } from './pages/topic-metrics.js';
import { SlowSubs } from './pages/slow-subs.js';
import './style.css';

const html = htm.bind(h);
const PAGES = [
  { id: 'overview', title: 'Overview', view: Overview },
  { id: 'endpoints', title: 'Endpoints', view: Endpoints },
  { id: 'limits', title: 'Limits', view: Limits },
  { id: 'connections', title: 'Connections', view: Connections },
  { id: 'topics', title: 'Topics', view: Topics },
  { id: 'rewrite', title: 'Topic rewrite', view: Rewrite },
  { id: 'topic-metrics', title: 'Topic metrics', view: TopicMetrics },
  { id: 'slow-subs', title: 'Slow subscribers', view: SlowSubs },
  { id: 'messages', title: 'Messages', view: Messages },
  { id: 'watch', title: 'Watch', view: LiveMessages },
  { id: 'rules', title: 'Rules', view: Rules },
  { id: 'sources', title: 'Data sources', view: Sources },
  { id: 'scripts', title: 'Scripts', view: Scripts },
  { id: 'commands', title: 'Commands', view: Commands },
  { id: 'policies', title: 'Auth and ACL', view: Policies },
  { id: 'client-db', title: 'Client database', view: ClientDb },
  { id: 'banned', title: 'Banned', view: Banned },
  { id: 'sparkplug', title: 'Sparkplug', view: Sparkplug },
  { id: 'schemas', title: 'Schemas', view: Schemas },
  { id: 'delayed', title: 'Delayed', view: Delayed },
  { id: 'logs', title: 'Logs', view: Logs },
  { id: 'users', title: 'Users', view: Users },
  { id: 'cluster', title: 'Cluster', view: Cluster },
  { id: 'tenants', title: 'Tenants', view: Tenants },
  { id: 'licences', title: 'Licences', view: Licenses },
  { id: 'platform-users', title: 'Platform users', view: PlatformUsers },
  { id: 'alerts', title: 'Alerts', view: Alerts },
  { id: 'channels', title: 'Channels', view: Channels },
  { id: 'audit', title: 'Audit log', view: Audit },
];

function pageOf(hash) {
  const id = hash.replace(/^#\/?/, '');
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
      await api('POST', '/public/login', { username: form.get('username'), password: form.get('password'), cookie: true });
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
  const View = page.view;
  return html`<div class="layout">
    <header>
      <strong>Spindle</strong>
      <nav aria-label="pages">
        ${PAGES.map((p) => html`<a href=${`#/${p.id}`} aria-current=${p === page ? 'page' : undefined}>${p.title}</a>`)}
      </nav>
      <span class="who">${user.username} (${user.role}) <button class="link" onClick=${signOut}>Sign out</button></span>
    </header>
    <main><${View} live=${live} user=${user} /></main>
  </div>`;
}

render(html`<${App} />`, document.getElementById('app'));
