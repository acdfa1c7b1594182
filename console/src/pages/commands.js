// Commands (inbound bridges, spec 4.9): the commands with their runtime (state, since, the node
// running it in a cluster, received, published, failed, reconnects, lag, last error; refreshed
// every 2 s while the page is open), add (type from /command/type, its config as JSON), change
// (name and config through /command/update: only the keys edited are sent, so the secrets the list
// does not show are kept), start, stop, delete.
import { h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';

import { api } from '../api.js';
import { errText, parseObject, pretty, usePoll, when } from '../forms.js';

const html = htm.bind(h);
const REFRESH_MS = 2000;

/** A starting config per type (docs/api/commands.md). */
const TEMPLATES = {
  KAFKA: { bootstrapServers: '127.0.0.1:9092', topic: 'telemetry', mqttTopic: 'kafka/${topic}/${key}', qos: 1 },
  RABBITMQ: { url: 'amqp://guest:guest@127.0.0.1:5672/', queue: 'to-mqtt', declare: true, mqttTopic: 'rabbit/${routingKey}', qos: 1 },
  ROCKETMQ: { endpoints: '127.0.0.1:8081', consumerGroup: 'spindle', topic: 'meters', mqttTopic: 'rocketmq/${tag}' },
  PULSAR: { serviceUrl: 'http://127.0.0.1:8080', topic: 'persistent://public/default/alarms', subscription: 'spindle', mqttTopic: 'pulsar/${key}' },
  NACOS: { serverAddr: '127.0.0.1:8848', serviceName: 'spindle-mqtt' },
};

export function Commands({ user }) {
  const [list, setList] = useState(null);
  const [runtime, setRuntime] = useState({});
  const [types, setTypes] = useState(Object.keys(TEMPLATES));
  const [error, setError] = useState(null);
  const [editing, setEditing] = useState(null);
  const canWrite = user.role === 'admin';
  async function load() {
    try {
      const r = await api('POST', '/command/query', { page: 1, size: 1000 });
      const rts = await Promise.all(r.data.map((c) => api('POST', '/command/runtime', { id: c.id }).then((a) => [c.id, a.data], () => [c.id, null])));
      setList(r.data);
      setRuntime(Object.fromEntries(rts));
      setError(null);
    } catch (err) {
      setError(errText('', err));
    }
  }
  usePoll(load, REFRESH_MS);
  useEffect(() => {
    api('GET', '/command/type').then((t) => Array.isArray(t) && setTypes(t), () => undefined);
  }, []);
  const clustered = Object.values(runtime).some((rt) => rt && 'runningOn' in rt);
  return html`<div>
    <h2>Commands</h2>
    ${canWrite && (editing
      ? html`<${ChangeCommand} key=${editing.id} command=${editing} onDone=${() => { setEditing(null); void load(); }} />`
      : html`<${AddCommand} types=${types} onAdded=${load} />`)}
    ${error && html`<p class="error" role="alert">${error}</p>`}
    <section class="card" aria-label="commands">
      <table>
        <thead><tr><th>Name</th><th>Type</th><th>State</th><th>Since</th>${clustered && html`<th>Running on</th>`}<th>Received</th><th>Published</th><th>Failed</th><th>Retries</th><th>Reconnects</th><th>Lag</th><th>Last error</th><th></th></tr></thead>
        <tbody>${(list ?? []).map((c) => html`<${CommandRow} key=${c.id} c=${c} rt=${runtime[c.id]} clustered=${clustered} canWrite=${canWrite} onChanged=${load} onEdit=${setEditing} />`)}</tbody>
      </table>
      ${list && list.length === 0 && html`<p class="muted">No commands.</p>`}
    </section>
  </div>`;
}

function AddCommand({ types, onAdded }) {
  const [name, setName] = useState('');
  const [type, setType] = useState('KAFKA');
  const [config, setConfig] = useState(pretty(TEMPLATES.KAFKA));
  const [error, setError] = useState(null);
  function changeType(t) {
    if (config === pretty(TEMPLATES[type] ?? {})) setConfig(pretty(TEMPLATES[t] ?? {}));
    setType(t);
  }
  async function add(e) {
    e.preventDefault();
    try {
      const body = { type, config: parseObject(config) };
      if (name.trim()) body.name = name.trim();
      await api('POST', '/command/add', body);
      setError(null);
      setName('');
      onAdded();
    } catch (err) {
      setError(errText('add', err));
    }
  }
  return html`<form class="card editor" onSubmit=${add} aria-label="add a command">
    <div class="inline">
      <label>Name <input name="name" value=${name} placeholder="the id" onInput=${(e) => setName(e.target.value)} /></label>
      <label>Type <select name="type" value=${type} onChange=${(e) => changeType(e.target.value)}>
        ${types.map((t) => html`<option value=${t}>${t}</option>`)}</select></label>
    </div>
    <label>Config (JSON) <textarea name="config" rows="6" spellcheck=${false} value=${config} onInput=${(e) => setConfig(e.target.value)} /></label>
    <div class="inline"><button type="submit">Add command</button></div>
    ${error && html`<p class="error" role="alert">${error}</p>`}
  </form>`;
}

/**
 * What /command/update needs to turn the config shown into the one typed: the keys whose value
 * changed, and null for a key taken out (the API merges; keys the list does not show, such as a
 * password, are never sent, so they are kept).
 */
function configChange(shown, typed) {
  const out = {};
  for (const [k, v] of Object.entries(typed)) if (JSON.stringify(v) !== JSON.stringify(shown[k])) out[k] = v;
  for (const k of Object.keys(shown)) if (!(k in typed)) out[k] = null;
  return out;
}

function ChangeCommand({ command, onDone }) {
  const [name, setName] = useState(command.name);
  const [config, setConfig] = useState(pretty(command.config ?? {}));
  const [error, setError] = useState(null);
  async function save(e) {
    e.preventDefault();
    try {
      const body = { id: command.id, config: configChange(command.config ?? {}, parseObject(config)) };
      if (name.trim() !== command.name) body.name = name.trim();
      await api('POST', '/command/update', body);
      setError(null);
      onDone();
    } catch (err) {
      setError(errText('save', err));
    }
  }
  return html`<form class="card editor" onSubmit=${save} aria-label=${`change ${command.name}`}>
    <p class="muted">Changing ${command.name} (${command.type}); a running command restarts with the new config. Only the
      keys you change are sent: passwords, tokens and the password in a URL are not shown and are kept.
      <button type="button" class="link" onClick=${onDone}>Cancel</button></p>
    <div class="inline">
      <label>Name <input name="name" required value=${name} onInput=${(e) => setName(e.target.value)} /></label>
    </div>
    <label>Config (JSON) <textarea name="config" rows="6" spellcheck=${false} value=${config} onInput=${(e) => setConfig(e.target.value)} /></label>
    <div class="inline"><button type="submit">Save command</button></div>
    ${error && html`<p class="error" role="alert">${error}</p>`}
  </form>`;
}

function CommandRow({ c, rt, clustered, canWrite, onChanged, onEdit }) {
  const [error, setError] = useState(null);
  async function call(path, what) {
    try {
      await api('POST', path, { id: c.id });
      setError(null);
      onChanged();
    } catch (err) {
      setError(errText(what, err));
    }
  }
  const failed = rt ? Object.values(rt.failed ?? {}).reduce((a, b) => a + b, 0) : undefined;
  const enabled = rt?.enabled ?? c.enabled;
  return html`<tr data-command=${c.name}>
    <td>${c.name}</td><td>${c.type}</td><td class="state">${rt?.state ?? c.state}</td><td>${when(rt?.since)}</td>
    ${clustered && html`<td>${rt?.runningOn ?? '–'}</td>`}
    <td>${rt?.received ?? '–'}</td><td class="published">${rt?.published ?? '–'}</td>
    <td title=${rt ? JSON.stringify(rt.failed) : ''}>${failed ?? '–'}</td><td>${rt?.publishRetries ?? '–'}</td><td>${rt?.reconnects ?? '–'}</td>
    <td>${rt?.lag ?? '–'}</td><td class="wrap last-error">${rt?.lastError ?? ''}</td>
    <td>${canWrite && html`
      ${(!enabled || rt?.state === 'failed') && html`<button onClick=${() => call('/command/start', 'start')}>${enabled ? 'Retry' : 'Start'}</button>`}
      ${enabled && html`<button onClick=${() => call('/command/stop', 'stop')}>Stop</button>`}
      <button onClick=${() => onEdit(c)}>Edit</button>
      <button class="danger" onClick=${() => call('/command/delete', 'delete')}>Delete</button>`}
      ${error && html`<span class="error" role="alert">${error}</span>`}</td>
  </tr>`;
}
