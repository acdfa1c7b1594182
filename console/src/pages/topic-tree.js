// Topic tree: the subscribed topic filters (/topic/query: every session, online or offline, of
// every node) and the retained topics (/mqtt/retain/query) as one tree by topic level, each level
// with the subscribers of the filters that end there, its retained message, and its subtree's
// totals; collapsible, only what is open is drawn. The broker does not measure message rates per
// topic (the whole broker's rates are on the Overview), so the tree shows counts, and says so.
// Read in pages of 1000, at most MAX_ITEMS of each; more is said, not hidden.
import { h } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import htm from 'htm';

import { api } from '../api.js';
import { errText } from '../forms.js';

const html = htm.bind(h);
const PAGE = 1000;
/** Subscribed filters, and retained topics, read at most. */
export const MAX_ITEMS = 20_000;

/** Every item of a paged POST query, up to MAX_ITEMS: {items, total}. */
async function all(path, body = {}) {
  const items = [];
  let total = 0;
  for (let page = 1; items.length < MAX_ITEMS; page++) {
    const r = await api('POST', path, { ...body, page, size: PAGE });
    total = r.total;
    items.push(...r.data);
    if (r.data.length < PAGE || items.length >= total) break;
  }
  return { items: items.slice(0, MAX_ITEMS), total };
}

function node(name, path) {
  return { name, path, children: new Map(), subscribers: 0, filters: [], retained: null, totalSubscribers: 0, totalFilters: 0, totalRetained: 0 };
}

/** The tree of `filters` ({topic, subscribers}) and `retained` ({topic, ...}) by level; a shared
 * subscription ($share/{group}/{filter}) is placed at its filter. */
export function buildTree(filters, retained) {
  const root = node('', '');
  const at = (topic) => {
    let n = root;
    for (const level of topic.split('/')) {
      let c = n.children.get(level);
      if (!c) {
        c = node(level, n.path === '' && n === root ? level : `${n.path}/${level}`);
        n.children.set(level, c);
      }
      n = c;
    }
    return n;
  };
  for (const f of filters) {
    const shared = /^\$(?:share\/([^/]+)|queue)\/(.+)$/.exec(f.topic);
    const n = at(shared ? shared[2] : f.topic);
    n.subscribers += f.subscribers;
    n.filters.push(shared ? { filter: f.topic, group: shared[1] ?? '$queue', subscribers: f.subscribers } : { filter: f.topic, subscribers: f.subscribers });
  }
  for (const m of retained) at(m.topic).retained = m;
  const sum = (n) => {
    n.totalSubscribers = n.subscribers;
    n.totalFilters = n.filters.length;
    n.totalRetained = n.retained ? 1 : 0;
    for (const c of n.children.values()) {
      sum(c);
      n.totalSubscribers += c.totalSubscribers;
      n.totalFilters += c.totalFilters;
      n.totalRetained += c.totalRetained;
    }
  };
  sum(root);
  return root;
}

export function TopicTree() {
  const [tree, setTree] = useState(null);
  const [sizes, setSizes] = useState(null);
  const [error, setError] = useState(null);
  const [open, setOpen] = useState(() => new Set());
  const [busy, setBusy] = useState(false);
  async function load() {
    setBusy(true);
    try {
      const [f, r] = await Promise.all([all('/topic/query'), all('/mqtt/retain/query')]);
      setTree(buildTree(f.items, r.items));
      setSizes({ filters: f.items.length, filtersTotal: f.total, retained: r.items.length, retainedTotal: r.total });
      setError(null);
    } catch (err) {
      setError(errText('', err));
    } finally {
      setBusy(false);
    }
  }
  useEffect(() => {
    void load();
  }, []);
  const toggle = (path) => setOpen((s) => {
    const next = new Set(s);
    if (next.has(path)) next.delete(path);
    else next.add(path);
    return next;
  });
  function expandAll() {
    const next = new Set();
    const walk = (n) => {
      if (n.children.size === 0) return;
      next.add(n.path);
      for (const c of n.children.values()) walk(c);
    };
    for (const c of tree.children.values()) walk(c);
    setOpen(next);
  }
  return html`<div>
    <h2>Topic tree</h2>
    <p class="inline-bar">
      <button onClick=${load} disabled=${busy}>Refresh</button>
      <button onClick=${expandAll} disabled=${!tree}>Expand all</button>
      <button onClick=${() => setOpen(new Set())}>Collapse all</button>
    </p>
    ${error && html`<p class="error" role="alert">${error}</p>`}
    ${sizes && html`<p class="muted" data-testid="tree-sizes">${sizes.filtersTotal} subscribed filters (client sessions of every node, online or offline) and ${sizes.retainedTotal} retained topics (not $SYS).${' '}
      ${sizes.filters < sizes.filtersTotal || sizes.retained < sizes.retainedTotal ? ` The tree shows the first ${sizes.filters} filters and ${sizes.retained} retained topics (at most ${MAX_ITEMS.toLocaleString()} of each). ` : ''}
      Message rates are not measured per topic by this broker: the counts below are subscribers and retained messages; the broker's message rates are on the Overview.</p>`}
    ${tree && html`<section class="card" aria-label="topic tree">
      <table class="tree">
        <thead><tr><th>Topic level</th><th>Subscribers here</th><th>Filters below</th><th>Subscribers below</th><th>Retained below</th><th>Retained here</th></tr></thead>
        <tbody>${rows(tree, 0, open, toggle)}</tbody>
      </table>
      ${tree.children.size === 0 && html`<p class="muted">No subscribed filter and no retained message.</p>`}
    </section>`}
  </div>`;
}

/** The rows of `parent`'s children, and of their children when open (by name; '#' and '+' last). */
function rows(parent, depth, open, toggle) {
  const order = (a, b) => (wild(a.name) - wild(b.name)) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  const out = [];
  for (const n of [...parent.children.values()].sort(order)) {
    const isOpen = open.has(n.path);
    out.push(html`<tr key=${n.path} data-path=${n.path}>
      <td style=${`padding-left: ${0.5 + depth * 1.25}rem`}>
        ${n.children.size > 0
          ? html`<button class="link" aria-expanded=${isOpen} aria-label=${`${isOpen ? 'collapse' : 'expand'} ${n.path}`} onClick=${() => toggle(n.path)}>${isOpen ? '▾' : '▸'}</button> `
          : html`<span aria-hidden="true">· </span>`}
        <code>${n.name === '' ? '(empty level)' : n.name}</code>
        ${n.filters.filter((f) => f.group).map((f) => html` <span class="muted">shared (${f.group}): ${f.subscribers}</span>`)}
      </td>
      <td class="subscribers">${n.subscribers || ''}</td><td>${n.totalFilters}</td><td>${n.totalSubscribers}</td><td>${n.totalRetained}</td>
      <td class="payload">${n.retained ? html`<code>${String(n.retained.payload ?? '').slice(0, 40)}</code>` : ''}</td>
    </tr>`);
    if (isOpen) out.push(...rows(n, depth + 1, open, toggle));
  }
  return out;
}

function wild(name) {
  return name === '#' ? 2 : name === '+' ? 1 : 0;
}
