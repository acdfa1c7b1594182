// Alerts of the control platform (/api/v1): the alerts with their state (firing, resolved) and
// handling status (set here: unhandled, handled, ignored), and the alert rules (list, add with the
// notification channels they notify, change: name, signal, aggregation, condition, severity,
// channels; enable, disable, delete). Refreshed every 5 s while
// the page is open.
import { h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';

import { attempt, errText } from '../forms.js';
import { NO_PLATFORM_ROLE, platformUser, v1All, v1Get, v1Write, when } from '../platform.js';

const html = htm.bind(h);
const REFRESH_MS = 5000;
const OPERATORS = ['>', '>=', '<', '<=', '==', '!='];
const SEVERITIES = ['info', 'warning', 'critical'];
const AGGREGATIONS = { counter: ['rate', 'increase'], gauge: ['last', 'avg', 'max', 'min'] };
const STATUSES = ['unhandled', 'handled', 'ignored'];

export function Alerts({ user }) {
  const [rules, setRules] = useState([]);
  const [alerts, setAlerts] = useState(null);
  const [orgs, setOrgs] = useState([]);
  const [signals, setSignals] = useState([]);
  const [channels, setChannels] = useState([]);
  const [editing, setEditing] = useState(null);
  const [state, setState] = useState('');
  const [error, setError] = useState(null);
  async function load(s = state) {
    try {
      const [r, a, o, c] = await Promise.all([v1All('/alert-rules'), v1Get('/alerts', { state: s, size: 100 }), v1All('/organizations'), v1All('/notification-channels')]);
      setRules(r);
      setAlerts(a);
      setOrgs(o);
      setChannels(c);
      setError(null);
    } catch (err) {
      setError(err.message);
    }
  }
  useEffect(() => {
    if (!platformUser(user)) return undefined;
    void v1Get('/alert-rules/signals').then((r) => setSignals(r.data), (err) => setError(err.message));
    void load();
    const t = setInterval(() => load(), REFRESH_MS);
    return () => clearInterval(t);
  }, [state]);
  if (!platformUser(user)) return html`<div><h2>Alerts</h2><p class="muted">${NO_PLATFORM_ROLE}</p></div>`;
  const orgName = (id) => (id === null ? 'platform' : orgs.find((o) => o.id === id)?.name ?? id);
  const act = (method, path, body, what) => attempt(what, setError, () => /** @type {any} */ (v1Write)(method, path, body), load);
  const list = alerts?.data ?? [];
  const channelName = (id) => channels.find((c) => c.id === id)?.name ?? id;
  const editRule = rules.find((r) => r.id === editing) ?? null;
  return html`<div>
    <h2>Alerts</h2>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    <section class="card" aria-label="alerts">
      <form class="inline" onSubmit=${(e) => e.preventDefault()}>
        <label>State <select name="state" value=${state} onChange=${(e) => setState(e.target.value)}>
          <option value="">any</option><option value="firing">firing</option><option value="resolved">resolved</option></select></label>
        <span class="muted">${alerts ? `${alerts.total} alert${alerts.total === 1 ? '' : 's'}${alerts.total > list.length ? `, the newest ${list.length} shown` : ''}` : ''}</span>
      </form>
      <table>
        <thead><tr><th>Rule</th><th>Organization</th><th>Severity</th><th>State</th><th>Message</th><th>Since</th><th>Occurrences</th><th>Status</th></tr></thead>
        <tbody>${list.map((a) => html`<tr key=${a.id} data-alert=${a.ruleName} data-state=${a.state}>
          <td>${a.ruleName}</td><td>${orgName(a.organizationId)}</td><td>${a.severity}</td><td class="state">${a.state}</td>
          <td>${a.message}</td><td>${when(a.firstTime)}${a.resolvedTime ? ` – ${when(a.resolvedTime)}` : ''}</td><td>${a.occurrences}</td>
          <td><select aria-label=${`status of ${a.ruleName}`} value=${a.status} onChange=${(e) => act('PUT', `/alerts/${encodeURIComponent(a.id)}`, { status: e.target.value }, a.ruleName)}>
            ${STATUSES.map((s) => html`<option>${s}</option>`)}</select></td>
        </tr>`)}</tbody>
      </table>
      ${alerts && list.length === 0 && html`<p class="muted">No alerts.</p>`}
    </section>
    <${AddRule} orgs=${orgs} signals=${signals} channels=${channels} onAdded=${() => load()} />
    <section class="card" aria-label="alert rules">
      <h3>Alert rules</h3>
      <table>
        <thead><tr><th>Name</th><th>Organization</th><th>Condition</th><th>Severity</th><th>Channels</th><th>State</th><th></th></tr></thead>
        <tbody>${rules.map((r) => html`<tr key=${r.id} data-rule=${r.name}>
          <td>${r.name}</td><td>${orgName(r.organizationId)}</td>
          <td><code>${r.signal} ${r.aggregation} ${r.operator} ${r.threshold} over ${r.window} s</code></td><td>${r.severity}</td>
          <td class="channels">${r.channelIds.map((id) => channelName(id)).join(', ')}</td>
          <td class="state">${r.enabled ? 'enabled' : 'disabled'}</td>
          <td><button onClick=${() => setEditing(r.id)} aria-expanded=${editing === r.id ? 'true' : 'false'}>Change</button>
            <button onClick=${() => act('PUT', `/alert-rules/${encodeURIComponent(r.id)}`, { enabled: !r.enabled }, r.name)}>${r.enabled ? 'Disable' : 'Enable'}</button>
            <button class="danger" onClick=${() => act('DELETE', `/alert-rules/${encodeURIComponent(r.id)}`, {}, `delete ${r.name}`)}>Delete</button></td>
        </tr>`)}</tbody>
      </table>
      ${rules.length === 0 && html`<p class="muted">No alert rules.</p>`}
      ${editRule && html`<${ChangeRule} key=${editRule.id} rule=${editRule} org=${orgName(editRule.organizationId)} signals=${signals} channels=${channels} onDone=${async (changed) => { setEditing(null); if (changed) await load(); }} />`}
    </section>
  </div>`;
}

/** Checkboxes for the channels a rule of `organizationId` may use (its organization's, or the
 * platform's for a platform-wide rule). */
function ChannelChoice({ channels, organizationId, chosen }) {
  const usable = channels.filter((c) => c.organizationId === organizationId);
  return html`<fieldset class="action" aria-label="channels">
    <legend>Notify</legend>
    ${usable.length === 0 && html`<span class="muted">no channels ${organizationId === null ? 'of the platform' : 'of this organization'} (Channels page)</span>`}
    ${usable.map((c) => html`<label class="check" key=${c.id}><input type="checkbox" name="channelIds" value=${c.id} defaultChecked=${chosen?.includes(c.id) ?? false} /> ${c.name} (${c.type})</label>`)}
  </fieldset>`;
}

function ChangeRule({ rule, org, signals, channels, onDone }) {
  const [error, setError] = useState(null);
  const [signal, setSignal] = useState(rule.signal);
  // As on the add form: broker signals are for platform-wide rules only.
  const usable = signals.filter((s) => rule.organizationId === null || s.scope === 'tenant');
  const kind = signals.find((s) => s.name === signal)?.kind;
  const aggregations = AGGREGATIONS[kind] ?? [rule.aggregation];
  async function submit(e) {
    e.preventDefault();
    const f = new FormData(e.target);
    const body = {
      name: String(f.get('name')).trim(),
      signal,
      aggregation: f.get('aggregation'),
      operator: f.get('operator'),
      threshold: String(f.get('threshold')).trim() === '' ? null : Number(f.get('threshold')),
      window: Number(f.get('window')),
      severity: f.get('severity'),
      channelIds: f.getAll('channelIds').map(String),
    };
    try {
      await v1Write('PUT', '/alert-rules/{id}', body, { id: rule.id });
      setError(null);
      await onDone(true);
    } catch (err) {
      setError(errText('change', err));
    }
  }
  // Default values, not values: the page's refresh every 5 s leaves what is being typed alone.
  return html`<form class="inline test" onSubmit=${submit} aria-label=${`change alert rule ${rule.name}`}>
    <b>Change ${rule.name}</b>
    <label>Name <input name="name" required autocomplete="off" defaultValue=${rule.name} /></label>
    <span class="muted">Organization: ${org} (a rule does not move: add one in the other organization)</span>
    <label>Signal <select name="signal" value=${signal} onChange=${(e) => setSignal(e.target.value)}>
      ${(usable.some((s) => s.name === rule.signal) ? usable : [{ name: rule.signal }, ...usable]).map((s) => html`<option value=${s.name} title=${s.description ?? ''}>${s.name}</option>`)}</select></label>
    <label>Aggregation <select name="aggregation" key=${kind ?? ''}>
      ${aggregations.map((a) => html`<option selected=${a === rule.aggregation}>${a}</option>`)}</select></label>
    <label>Operator <select name="operator">${OPERATORS.map((o) => html`<option selected=${o === rule.operator}>${o}</option>`)}</select></label>
    <label>Threshold <input name="threshold" type="number" step="any" required defaultValue=${rule.threshold} /></label>
    <label>Window (s) <input name="window" type="number" min="1" max="86400" required defaultValue=${rule.window} /></label>
    <label>Severity <select name="severity">${SEVERITIES.map((s) => html`<option selected=${s === rule.severity}>${s}</option>`)}</select></label>
    <${ChannelChoice} channels=${channels} organizationId=${rule.organizationId} chosen=${rule.channelIds} />
    <button type="submit">Save</button>
    <button type="button" onClick=${() => onDone(false)}>Cancel</button>
    ${error && html`<p class="error" role="alert">${error}</p>`}
  </form>`;
}

function AddRule({ orgs, signals, channels, onAdded }) {
  const [org, setOrg] = useState('');
  const [signal, setSignal] = useState('');
  const [error, setError] = useState(null);
  // Broker signals are for platform-wide rules only; an organization's rule watches tenant signals.
  const usable = signals.filter((s) => (org === '' ? true : s.scope === 'tenant'));
  const chosen = usable.find((s) => s.name === signal) ?? usable[0];
  async function submit(e) {
    e.preventDefault();
    const form = e.target;
    const f = new FormData(form);
    const body = {
      organizationId: org === '' ? null : org,
      name: String(f.get('name')).trim(),
      signal: chosen?.name ?? '',
      operator: f.get('operator'),
      threshold: String(f.get('threshold')).trim() === '' ? null : Number(f.get('threshold')),
      window: Number(f.get('window')),
      severity: f.get('severity'),
      channelIds: f.getAll('channelIds').map(String),
    };
    if (f.get('aggregation')) body.aggregation = f.get('aggregation');
    try {
      await v1Write('POST', '/alert-rules', body);
      setError(null);
      form.querySelector('input[name="name"]').value = '';
      for (const box of form.querySelectorAll('input[name="channelIds"]')) box.checked = false;
      onAdded();
    } catch (err) {
      setError(errText('add', err));
    }
  }
  return html`<form class="card inline" onSubmit=${submit} aria-label="add an alert rule">
    <label>Organization <select name="organizationId" value=${org} onChange=${(e) => setOrg(e.target.value)}>
      <option value="">platform-wide</option>${orgs.map((o) => html`<option value=${o.id}>${o.name}</option>`)}</select></label>
    <label>Name <input name="name" required autocomplete="off" /></label>
    <label>Signal <select name="signal" value=${chosen?.name ?? ''} onChange=${(e) => setSignal(e.target.value)}>
      ${usable.map((s) => html`<option value=${s.name} title=${s.description}>${s.name}</option>`)}</select></label>
    <label>Aggregation <select name="aggregation"><option value="">default</option>
      ${(AGGREGATIONS[chosen?.kind] ?? []).map((a) => html`<option>${a}</option>`)}</select></label>
    <label>Operator <select name="operator">${OPERATORS.map((o) => html`<option>${o}</option>`)}</select></label>
    <label>Threshold <input name="threshold" type="number" step="any" required /></label>
    <label>Window (s) <input name="window" type="number" min="1" max="86400" value="60" required /></label>
    <label>Severity <select name="severity">${SEVERITIES.map((s) => html`<option selected=${s === 'warning'}>${s}</option>`)}</select></label>
    <${ChannelChoice} channels=${channels} organizationId=${org === '' ? null : org} />
    <button type="submit">Add rule</button>
    ${error && html`<p class="error" role="alert">${error}</p>`}
  </form>`;
}
