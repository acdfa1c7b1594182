// The schema registry (/api/schemas, /api/schema-checks): named protobuf, avro and json schemas
// (add, edit, delete; the text in a textarea), a "try decode" box, and the schema checks on topic
// filters. Viewers see the lists and may try a decode.
import { h } from 'preact';
import { useState } from 'preact/hooks';
import htm from 'htm';

import { api } from '../api.js';
import { attempt, usePoll } from '../forms.js';

const html = htm.bind(h);
const TYPES = ['protobuf', 'avro', 'json'];

export function Schemas({ user }) {
  const [schemas, setSchemas] = useState([]);
  const [checks, setChecks] = useState([]);
  const [error, setError] = useState(null);
  const [editing, setEditing] = useState(null);
  const [decoded, setDecoded] = useState(null);
  const canWrite = user.role === 'admin';
  async function load() {
    try {
      setSchemas((await api('GET', '/api/schemas')).data);
      setChecks((await api('GET', '/api/schema-checks')).data);
      setError(null);
    } catch (err) {
      setError(err.message);
    }
  }
  usePoll(load, 5000);
  async function save(e) {
    e.preventDefault();
    const form = e.target;
    const f = new FormData(form);
    const body = { type: /** @type {any} */ (f.get('type')), source: String(f.get('source')), description: String(f.get('description')) };
    const name = String(f.get('name')).trim();
    const write = editing ? () => api('PUT', '/api/schemas/{name}', body, { params: { name } }) : () => api('POST', '/api/schemas', { name, ...body });
    if (await attempt(editing ? `update ${name}` : 'add', setError, write, load)) {
      form.reset();
      setEditing(null);
    }
  }
  const remove = (s) => attempt(`delete ${s.name}`, setError, () => api('DELETE', '/api/schemas/{name}', undefined, { params: { name: s.name } }), load);
  async function tryDecode(e) {
    e.preventDefault();
    const f = new FormData(e.target);
    /** @type {import('../api-typing').BodyOf<'/api/schemas/{name}/decode', 'POST'>} */
    const body = { payload: String(f.get('payload')), encoding: /** @type {any} */ (f.get('encoding')) };
    if (f.get('messageType')) body.messageType = String(f.get('messageType'));
    setDecoded(null);
    const answer = await attempt('decode', setError, () => api('POST', '/api/schemas/{name}/decode', body, { params: { name: String(f.get('schema')) } }));
    if (answer) setDecoded(JSON.stringify(answer.data, null, 2));
  }
  async function addCheck(e) {
    e.preventDefault();
    const form = e.target;
    const f = new FormData(form);
    /** @type {import('../api-typing').BodyOf<'/api/schema-checks', 'POST'>} */
    const body = { filter: String(f.get('filter')).trim(), schema: String(f.get('schema')) };
    if (f.get('messageType')) body.messageType = String(f.get('messageType'));
    if (await attempt('add check', setError, () => api('POST', '/api/schema-checks', body), load)) form.reset();
  }
  const removeCheck = (c) => attempt(`check ${c.filter}`, setError, () => api('DELETE', '/api/schema-checks/{filter}', undefined, { params: { filter: c.filter } }), load);
  const schemaOptions = schemas.map((s) => html`<option value=${s.name}>${s.name}</option>`);
  return html`<div>
    <h2>Schemas</h2>
    <p class="hint">Protobuf (.proto), Avro (JSON) and JSON Schema schemas for the rules' schema_decode() and schema_encode(), and for schema checks on topic filters: a PUBLISH that does not decode is refused (0x99 Payload format invalid; dropped on MQTT 3.1.1).</p>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    ${canWrite && html`<form class="card" onSubmit=${save} aria-label=${editing ? `edit schema ${editing.name}` : 'add a schema'} key=${editing?.name ?? 'new'}>
      <label>Name <input name="name" required autocomplete="off" defaultValue=${editing?.name ?? ''} readOnly=${editing !== null} /></label>
      <label>Type <select name="type">${TYPES.map((t) => html`<option value=${t} selected=${editing?.type === t}>${t}</option>`)}</select></label>
      <label>Description <input name="description" autocomplete="off" defaultValue=${editing?.description ?? ''} /></label>
      <label>Schema <textarea name="source" rows="8" spellcheck=${false} required defaultValue=${editing?.source ?? ''} /></label>
      <button type="submit">${editing ? 'Save' : 'Add'}</button>
      ${editing && html` <button type="button" onClick=${() => setEditing(null)}>Cancel</button>`}
    </form>`}
    <section class="card">
      <table>
        <thead><tr><th>Name</th><th>Type</th><th>Description</th><th>By</th><th>Changed</th><th></th></tr></thead>
        <tbody>${schemas.map((s) => html`<tr key=${s.name} data-schema=${s.name}>
          <td>${s.name}</td><td>${s.type}</td><td>${s.description}</td><td>${s.by}</td><td>${new Date(s.at).toLocaleString()}</td>
          <td>${canWrite && html`<button onClick=${() => setEditing(s)}>Edit</button> <button class="danger" aria-label=${`delete schema ${s.name}`} onClick=${() => remove(s)}>Delete</button>`}</td>
        </tr>`)}</tbody>
      </table>
    </section>
    <form class="card" onSubmit=${tryDecode} aria-label="try decode">
      <h3>Try decode</h3>
      <label>Schema <select name="schema" required>${schemaOptions}</select></label>
      <label>Message type <input name="messageType" autocomplete="off" placeholder="protobuf: demo.Reading" /></label>
      <label>Payload is <select name="encoding"><option value="base64">base64</option><option value="text">text</option></select></label>
      <label>Payload <textarea name="payload" rows="3" spellcheck=${false} required /></label>
      <button type="submit">Decode</button>
      ${decoded !== null && html`<pre class="decoded">${decoded}</pre>`}
    </form>
    <section class="card">
      <h3>Checks on topic filters</h3>
      ${canWrite && html`<form class="inline" onSubmit=${addCheck} aria-label="add a schema check">
        <label>Filter <input name="filter" required autocomplete="off" placeholder="sensors/+" /></label>
        <label>Schema <select name="schema" required>${schemaOptions}</select></label>
        <label>Message type <input name="messageType" autocomplete="off" /></label>
        <button type="submit">Add check</button>
      </form>`}
      <table>
        <thead><tr><th>Filter</th><th>Schema</th><th>Message type</th><th>By</th><th></th></tr></thead>
        <tbody>${checks.map((c) => html`<tr key=${c.filter} data-check=${c.filter}>
          <td>${c.filter}</td><td>${c.schema}</td><td>${c.messageType ?? ''}</td><td>${c.by}</td>
          <td>${canWrite && html`<button class="danger" aria-label=${`remove the check on ${c.filter}`} onClick=${() => removeCheck(c)}>Remove</button>`}</td>
        </tr>`)}</tbody>
      </table>
    </section>
  </div>`;
}
