// @ts-check
// The navigation: the pages of registry.js under their group's heading, and a search box that
// filters them by title or group. Keyboard: "/" focuses the search, the arrow keys move through
// the links shown, Enter opens the first match, Escape clears the search.
import { h } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import htm from 'htm';

import { GROUPS, PAGES } from './registry.js';

const html = htm.bind(h);

/** Pages whose title or group holds every word of `query` (case-insensitive). */
export function matching(/** @type {string} */ query) {
  const words = query.toLowerCase().split(/\s+/).filter(Boolean);
  return PAGES.filter((p) => words.every((w) => p.title.toLowerCase().includes(w) || p.group.toLowerCase().includes(w)));
}

/** @param {{ current: import('./registry.js').PageEntry }} props */
export function Nav({ current }) {
  const [query, setQuery] = useState('');
  const search = useRef(/** @type {HTMLInputElement | null} */ (null));
  const box = useRef(/** @type {HTMLElement | null} */ (null));
  const shown = matching(query);
  useEffect(() => {
    /** @param {KeyboardEvent} e */
    const onKey = (e) => {
      const t = /** @type {HTMLElement} */ (e.target);
      if (e.key === '/' && !e.ctrlKey && !e.metaKey && !/^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName) && !t.isContentEditable) {
        e.preventDefault();
        search.current?.focus();
      }
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, []);
  /** Up and down through the search box and the links shown. */
  function move(/** @type {KeyboardEvent} */ e) {
    if (e.key !== 'ArrowDown' && e.key !== 'ArrowUp') return;
    const items = [search.current, ...(box.current?.querySelectorAll('a') ?? [])];
    const at = items.indexOf(/** @type {any} */ (document.activeElement));
    if (at < 0) return;
    e.preventDefault();
    const next = items[Math.max(0, Math.min(items.length - 1, at + (e.key === 'ArrowDown' ? 1 : -1)))];
    next?.focus();
  }
  function onSearchKey(/** @type {KeyboardEvent} */ e) {
    if (e.key === 'Enter' && shown[0]) {
      e.preventDefault();
      location.hash = `#/${shown[0].id}`;
      setQuery('');
    } else if (e.key === 'Escape') {
      setQuery('');
    }
  }
  return html`<nav aria-label="pages" class="side" ref=${box} onKeyDown=${move}>
    <input type="search" class="nav-search" placeholder="Search pages ( / )" aria-label="Search pages" ref=${search}
      value=${query} onInput=${(/** @type {any} */ e) => setQuery(e.currentTarget.value)} onKeyDown=${onSearchKey} />
    ${GROUPS.map((g) => {
      const items = shown.filter((p) => p.group === g);
      if (items.length === 0) return null;
      const id = `nav-${g.toLowerCase().replace(/\s+/g, '-')}`;
      return html`<div role="group" class="nav-group" aria-labelledby=${id} key=${g}>
        <h2 id=${id}>${g}</h2>
        <ul>${items.map((p) => html`<li key=${p.id}><a href=${`#/${p.id}`} aria-current=${p === current ? 'page' : undefined}>${p.title}</a></li>`)}</ul>
      </div>`;
    })}
    ${shown.length === 0 && html`<p class="muted" role="status">No page matches.</p>`}
  </nav>`;
}
