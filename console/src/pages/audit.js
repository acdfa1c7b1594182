// The audit log (/api/v1/audit-logs): every write through either API and every sign-in, newest
// first, paged, with the filters the API has (user, action, resource, resource id, organization,
// time range). Read only: no route changes or deletes an entry. Reads (action `read`, audited only
// with audit.reads) are left out unless "Show reads" is on.
import { h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';

import { NO_PLATFORM_ROLE, platformUser, v1All, v1Get } from '../platform.js';

const html = htm.bind(h);
const PAGE_SIZE = 50;

/** A datetime-local value (local time, no zone) as an ISO time, or undefined. */
function iso(v) {
  const s = String(v ?? '').trim();
  return s === '' ? undefined : new Date(s).toISOString();
}

export function Audit({ user }) {
  const [filters, setFilters] = useState({});
  const [reads, setReads] = useState(false);
  const [page, setPage] = useState(1);
  const [result, setResult] = useState(null);
  const [orgs, setOrgs] = useState([]);
  const [error, setError] = useState(null);
  async function load(f = filters, p = page, r = reads) {
    try {
      setResult(await v1Get('/audit-logs', { ...f, ...(r ? {} : { reads: false }), page: p, size: PAGE_SIZE }));
      setError(null);
    } catch (err) {
      setError(`${err.field ? `${err.field}: ` : ''}${err.message}`);
    }
  }
  useEffect(() => {
    if (!platformUser(user)) return;
    void load();
    void v1All('/organizations').then(setOrgs, () => undefined);
  }, []);
  if (!platformUser(user)) return html`<div><h2>Audit log</h2><p class="muted">${NO_PLATFORM_ROLE}</p></div>`;
  function search(e) {
    e.preventDefault();
    const d = new FormData(e.target);
    const f = {};
    for (const k of ['username', 'action', 'resource', 'resourceId', 'organizationId']) {
      const v = String(d.get(k) ?? '').trim();
      if (v) f[k] = v;
    }
    const from = iso(d.get('from'));
    const to = iso(d.get('to'));
    if (from) f.from = from;
    if (to) f.to = to;
    setFilters(f);
    setPage(1);
    void load(f, 1);
  }
  const go = (p) => {
    setPage(p);
    void load(filters, p);
  };
  const rows = result?.data ?? [];
  const total = result?.total ?? 0;
  const orgName = (id) => orgs.find((o) => o.id === id)?.name ?? id ?? '';
  return html`<div>
    <h2>Audit log</h2>
    <form class="card inline" role="search" aria-label="audit log filters" onSubmit=${search}>
      <label>User <input name="username" autocomplete="off" /></label>
      <label>Action <input name="action" autocomplete="off" placeholder="create, delete, login…" /></label>
      <label>Resource <input name="resource" autocomplete="off" placeholder="organization, application…" /></label>
      <label>Resource id <input name="resourceId" autocomplete="off" /></label>
      <label>Organization <select name="organizationId"><option value="">any</option>${orgs.map((o) => html`<option value=${o.id}>${o.name}</option>`)}</select></label>
      <label>From <input name="from" type="datetime-local" step="1" /></label>
      <label>To <input name="to" type="datetime-local" step="1" /></label>
      <label class="check"><input type="checkbox" name="reads" checked=${reads} onChange=${(e) => { setReads(e.target.checked); setPage(1); void load(filters, 1, e.target.checked); }} /> Show reads</label>
      <button type="submit">Search</button>
      ${error && html`<p class="error" role="alert">${error}</p>`}
    </form>
    <section class="card" aria-label="audit entries">
      <p class="muted" data-testid="audit-total">${result ? `${total} entr${total === 1 ? 'y' : 'ies'}${reads ? ', reads included' : ', reads hidden'}${total > PAGE_SIZE ? `, page ${page} of ${Math.ceil(total / PAGE_SIZE)}` : ''}` : ''}. Reads are audited only with audit.reads on.</p>
      <table>
        <thead><tr><th>Time</th><th>User</th><th>Role</th><th>Action</th><th>Resource</th><th>Id</th><th>Organization</th><th>Request</th><th>Status</th><th>Address</th></tr></thead>
        <tbody>${rows.map((e) => html`<tr key=${e.id} data-action=${e.action} data-resource=${e.resource}>
          <td>${new Date(e.time).toLocaleString()}</td><td>${e.username}</td><td>${e.role}</td><td>${e.action}</td><td>${e.resource}</td>
          <td><code>${e.resourceId ?? ''}</code></td><td>${orgName(e.organizationId)}</td><td><code>${e.method} ${e.path}</code></td><td>${e.status}</td><td>${e.address}</td>
        </tr>`)}</tbody>
      </table>
      ${result && rows.length === 0 && html`<p class="muted">No entries.</p>`}
      ${total > PAGE_SIZE && html`<p>
        <button disabled=${page <= 1} onClick=${() => go(page - 1)}>Previous</button>
        <button disabled=${page * PAGE_SIZE >= total} onClick=${() => go(page + 1)}>Next</button></p>`}
    </section>
  </div>`;
}
