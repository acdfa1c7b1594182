// Rules: the rules with their runtime counters (refreshed every 2 s while the page is open), an
// SQL editor that runs /rule/test on sample data, and create (with an optional republish
// action), enable or disable, delete.
import { h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';

import { api } from '../api.js';

const html = htm.bind(h);
const REFRESH_MS = 2000;

export function Rules({ user }) {
  const [rules, setRules] = useState([]);
  const [runtime, setRuntime] = useState({});
  const [error, setError] = useState(null);
  const canWrite = user.role === 'admin';
  async function load() {
    try {
      const r = await api('POST', '/rule/query', { page: 1, size: 1000 });
      setRules(r.data);
      const counters = await Promise.all(r.data.map((x) => api('POST', '/rule/runtime', { id: x.id }).then((a) => [x.id, a.data], () => [x.id, null])));
      setRuntime(Object.fromEntries(counters));
      setError(null);
    } catch (err) {
      setError(err.message);
    }
  }
  useEffect(() => {
    void load();
    const t = setInterval(load, REFRESH_MS);
    return () => clearInterval(t);
  }, []);
  async function act(path, body, what) {
    try {
      await api('POST', path, body);
      await load();
    } catch (err) {
      setError(`${what}: ${err.message}`);
    }
  }
  return html`<div>
    <h2>Rules</h2>
    <${RuleEditor} canWrite=${canWrite} onCreated=${load} />
    ${error && html`<p class="error" role="alert">${error}</p>`}
    <section class="card">
      <table>
        <thead><tr><th>Name</th><th>SQL</th><th>State</th><th>Matched</th><th>Passed</th><th>Failed</th><th>Last error</th><th></th></tr></thead>
        <tbody>${rules.map((r) => {
          const rt = runtime[r.id];
          return html`<tr key=${r.id} data-rule=${r.name}>
            <td>${r.name}</td><td><code>${r.sql.length > 60 ? `${r.sql.slice(0, 60)}…` : r.sql}</code></td>
            <td>${r.enabled ? 'enabled' : 'disabled'}</td>
            <td class="matched">${rt?.matched ?? '–'}</td><td>${rt?.passed ?? '–'}</td><td>${rt?.failed ?? '–'}</td>
            <td>${rt?.lastError ?? ''}</td>
            <td>${canWrite && html`
              <button onClick=${() => act('/rule/state/set', { id: r.id, enabled: !r.enabled }, r.name)}>${r.enabled ? 'Disable' : 'Enable'}</button>
              <button class="danger" onClick=${() => act('/rule/delete', { id: r.id }, r.name)}>Delete</button>`}</td>
          </tr>`;
        })}</tbody>
      </table>
      ${rules.length === 0 && html`<p class="muted">No rules.</p>`}
    </section>
  </div>`;
}

function RuleEditor({ canWrite, onCreated }) {
  const [name, setName] = useState('');
  const [sql, setSql] = useState('SELECT payload.temp AS temp, clientid FROM "sensors/#" WHERE payload.temp > 30');
  const [topic, setTopic] = useState('sensors/1');
  const [payload, setPayload] = useState('{"temp": 35}');
  const [republish, setRepublish] = useState('');
  const [result, setResult] = useState(null);
  const [error, setError] = useState(null);
  async function test() {
    setResult(null);
    try {
      const r = await api('POST', '/rule/test', { sql, testData: { topic, payload, clientid: 'console-test' } });
      setResult(r.data ?? r);
      setError(null);
    } catch (err) {
      setError(`test: ${err.message}`);
    }
  }
  async function create(e) {
    e.preventDefault();
    const actions = republish.trim() ? [{ type: 'republish', config: { topic: republish.trim() } }] : [];
    try {
      await api('POST', '/rule/add', { name, sql, actions });
      setError(null);
      setName('');
      onCreated();
    } catch (err) {
      setError(`create: ${err.field ? `${err.field}: ` : ''}${err.message}`);
    }
  }
  return html`<form class="card editor" onSubmit=${create} aria-label="rule editor">
    <label>SQL <textarea name="sql" rows="4" spellcheck="false" value=${sql} onInput=${(e) => setSql(e.target.value)} /></label>
    <div class="inline">
      <label>Sample topic <input name="topic" value=${topic} onInput=${(e) => setTopic(e.target.value)} /></label>
      <label>Sample payload <input name="payload" class="wide" value=${payload} onInput=${(e) => setPayload(e.target.value)} /></label>
      <button type="button" onClick=${test}>Test</button>
    </div>
    ${result && html`<pre data-testid="rule-test-result">${JSON.stringify(result, null, 2)}</pre>`}
    ${canWrite && html`<div class="inline">
      <label>Name <input name="name" required value=${name} onInput=${(e) => setName(e.target.value)} /></label>
      <label>Republish to (optional) <input name="republish" placeholder="alerts/\${clientid}" value=${republish} onInput=${(e) => setRepublish(e.target.value)} /></label>
      <button type="submit">Create rule</button>
    </div>`}
    ${error && html`<p class="error" role="alert">${error}</p>`}
  </form>`;
}
