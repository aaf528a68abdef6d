// The listing. The server's rows arrive as a plain table (#rows, hidden by
// the style sheet when scripts run, so it is never laid out); the shown
// table is built here, the first screenful at once and the rest in slices,
// so a folder of 10,000 entries shows in a fraction of its full layout
// time. Sorting and the filter re-render it; `load` reads the folder again
// as JSON.
import { api } from './api.js';
import { depth, here, isDir, path, top, withShare } from './context.js';
import { failure, toast } from './dialogs.js';
import { $, collator, doc, dtf, enc, h, humanSize } from './dom.js';
import { renderGrid } from './grid.js';
import { keepOnly, select, selected } from './selection.js';

const FIRST = 150; // rows rendered before the page counts as ready
const SLICE = 1000; // rows added per later step
let table = null;
let tbody = null;
let upRow = null;
let entries = [];
let sortKey = 'name';
let sortDir = 1;
let filterText = '';
let generation = 0;
let current = [];

/** The entries as shown now (sorted, filtered): the viewer steps through them. */
export const shownNow = () => current;

/** A row's URL (carrying a share token on). */
export const link = (e) => withShare(here + enc(e.name) + (e.dir ? '/' : ''));
/** A row's path on the server, without any share token. */
export const pathOf = (e) => here + enc(e.name) + (e.dir ? '/' : '');

export function buildTable() {
  const main = $('main');
  if (!main) return;
  // Explicit roles: the rows lay out as grids, which can cost a table its
  // implicit semantics for screen readers.
  const th = (attrs, ...kids) => h('th', Object.assign({ role: 'columnheader' }, attrs), ...kids);
  const head = h(
    'tr',
    { role: 'row' },
    th({ class: 'n', 'data-key': 'name', 'aria-sort': 'ascending' }, 'Name'),
    th({ class: 's', 'data-key': 'size' }, 'Size'),
    th({ class: 'm', 'data-key': 'modified' }, 'Modified'),
    th({ class: 'a' }, h('span', { class: 'vh' }, 'Actions')),
  );
  tbody = h('tbody', { role: 'rowgroup' });
  table = h('table', { id: 'list', role: 'table', 'aria-label': 'Files' }, h('thead', { role: 'rowgroup' }, head), tbody);
  if (path !== '/' && depth > top) {
    upRow = h(
      'tr',
      { class: 'd up', role: 'row' },
      h('td', { class: 'n', role: 'cell' }, h('a', { href: withShare('../'), rel: 'up' }, '../')),
      h('td', { class: 's', role: 'cell' }),
      h('td', { class: 'm', role: 'cell' }),
      h('td', { class: 'a', role: 'cell' }),
    );
    tbody.append(upRow);
  }
  main.prepend(table);
}

function makeRow(e) {
  const a = h('a', { href: withShare(enc(e.name) + (e.dir ? '/' : '')) }, e.name + (e.dir ? '/' : ''));
  const tick = h('input', { type: 'checkbox', class: 'sel', 'aria-label': 'Select ' + e.name, checked: selected.has(e.name) });
  tick.addEventListener('change', () => select(e.name, tick.checked));
  const size = h('td', { class: 's', role: 'cell' }, e.dir ? '' : humanSize(e.size));
  const when = h('td', { class: 'm', role: 'cell' });
  if (e.iso) when.append(h('time', { datetime: e.iso, title: e.iso }, fmtTime(e.mtime)));
  const tr = h(
    'tr',
    e.dir ? { class: 'd', role: 'row' } : { role: 'row' },
    h('td', { class: 'n', role: 'cell' }, tick, a),
    size,
    when,
    h('td', { class: 'a', role: 'cell' }, h('button', { type: 'button', class: 'act', title: 'Actions', 'aria-label': 'Actions for ' + e.name }, '\u22EF')),
  );
  tr.wsEntry = e;
  return tr;
}

function fmtTime(ms) {
  return ms == null || isNaN(ms) ? '' : dtf.format(ms);
}

/** Take the entries in the server's rows (the cells listing.rs writes:
 * name, modified with its ISO time in data-t, size in bytes). Whether the
 * rows held markup this script cannot read (another version). */
export function takeServerRows(rows) {
  const out = [];
  const body = rows.tBodies[0];
  if (body) {
    for (const tr of body.rows) {
      const [n, m, s] = tr.cells;
      const a = n && n.firstElementChild;
      if (!a || !m || !s || tr.classList.contains('up')) continue;
      const dir = tr.classList.contains('d');
      const name = dir ? a.textContent.slice(0, -1) : a.textContent;
      const iso = m.dataset.t || null;
      out.push({ name, dir, size: dir ? 0 : Number(s.textContent) || 0, iso, mtime: iso ? Date.parse(iso) : null, tr: null });
    }
  }
  entries = out;
  return !entries.length && !!rows.querySelector('tbody tr:not(.up)');
}

function compare(a, b) {
  if (a.dir !== b.dir) return a.dir ? -1 : 1; // folders first, either direction
  let r = 0;
  if (sortKey === 'size') r = a.size - b.size;
  else if (sortKey === 'modified') r = (a.mtime || 0) - (b.mtime || 0);
  if (r === 0) r = collator.compare(a.name, b.name);
  return r * sortDir;
}

/** Show the entries, sorted and filtered; resolves once every row is in. */
export function render() {
  const gen = ++generation;
  const shown = filterText
    ? entries.filter((e) => e.name.toLowerCase().includes(filterText))
    : entries.slice();
  shown.sort(compare);
  current = shown;
  renderGrid(shown, link, (e) => withShare(pathOf(e) + '?thumbnail'));
  const rowsOf = (from, to) => {
    const frag = doc.createDocumentFragment();
    for (let i = from; i < to; i++) {
      const e = shown[i];
      frag.append(e.tr || (e.tr = makeRow(e)));
    }
    return frag;
  };
  const first = rowsOf(0, Math.min(FIRST, shown.length));
  if (upRow) first.prepend(upRow);
  tbody.replaceChildren(first);
  const empty = $('#empty');
  if (empty) {
    empty.hidden = shown.length > 0;
    empty.textContent = entries.length ? 'No names match the filter.' : 'This folder is empty.';
  }
  for (const th of table.tHead.rows[0].cells) {
    if (!th.dataset.key) continue;
    if (th.dataset.key === sortKey) th.setAttribute('aria-sort', sortDir > 0 ? 'ascending' : 'descending');
    else th.removeAttribute('aria-sort');
  }
  return new Promise((resolve) => {
    let at = FIRST;
    const step = () => {
      if (gen !== generation) return resolve(); // a newer render took over
      if (at >= shown.length) return resolve();
      tbody.append(rowsOf(at, Math.min(at + SLICE, shown.length)));
      at += SLICE;
      setTimeout(step, 0);
    };
    if (at >= shown.length) resolve();
    else setTimeout(step, 0);
  });
}

/** The filter's text: show only names containing it. */
export function setFilter(text) {
  filterText = text.trim().toLowerCase();
  render();
}

/** Read the folder again (`?format=json`) and show it. */
export async function load() {
  if (!isDir) return;
  const r = await api(withShare(here + '?format=json'), { headers: { Accept: 'application/json' }, cache: 'no-store' });
  if (!r.ok) {
    toast(await failure(r, 'Could not read the folder'));
    return;
  }
  const list = await r.json();
  const old = new Map(entries.map((e) => [e.name + (e.dir ? '/' : ''), e]));
  entries = list.map((j) => {
    const dir = j.type === 'dir';
    const mtime = j.modified ? Date.parse(j.modified) : null;
    const prev = old.get(j.name + (dir ? '/' : ''));
    // A row that did not change keeps its element.
    if (prev && prev.size === j.size && prev.iso === j.modified) return prev;
    return { name: j.name, dir, size: j.size, iso: j.modified, mtime, tr: null };
  });
  keepOnly(new Set(entries.map((e) => e.name)));
  await render();
}

let reloadTimer = 0;
/** `load` once a burst of changes (uploads finishing) has settled. */
export function reloadSoon() {
  clearTimeout(reloadTimer);
  reloadTimer = setTimeout(load, 250);
}

/** Sorting by the column heads; a row's ⋯ button calls `onActions`. */
export function setupTable(onActions) {
  for (const th of table.tHead.rows[0].cells) {
    const key = th.dataset.key;
    if (!key) continue;
    const b = h('button', { type: 'button' }, th.textContent);
    b.addEventListener('click', () => {
      if (sortKey === key) sortDir = -sortDir;
      else {
        sortKey = key;
        sortDir = 1;
      }
      render();
    });
    th.replaceChildren(b);
  }
  tbody.addEventListener('click', (ev) => {
    const btn = ev.target.closest('button.act');
    if (!btn) return;
    const e = btn.closest('tr').wsEntry;
    if (e) onActions(e, btn);
  });
}
