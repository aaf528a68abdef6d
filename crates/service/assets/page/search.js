// The search box (servers started with --search, data-search on <body>):
// names below this folder as you type (debounced; a newer query's answer
// replaces an older one's, never the reverse), or words inside files with
// "In files". Results show their path below the folder, size and date; the
// server judged each one against the asker's rights, hidden names and a
// share link's folder before sending it.
import { api } from './api.js';
import { here, withShare } from './context.js';
import { $, doc, dtf, encPath, h, humanSize } from './dom.js';

const WAIT_MS = 200;
export const searchOn = doc.body.dataset.search === '1';
let asked = 0;
let timer = 0;

/** The query a search page's URL carries (`?q=`), or ''. */
export const urlQuery = () => new URLSearchParams(location.search).get('q') || '';

export function setupSearch() {
  const bar = $('#bar');
  if (!searchOn || !bar) return;
  const box = h('input', { type: 'search', id: 'search', placeholder: 'Search below this folder', 'aria-label': 'Search names below this folder' });
  const inFiles = h('input', { type: 'checkbox', id: 'search-content' });
  const label = h('label', { class: 'search-content' }, inFiles, ' In files');
  const results = h('section', { id: 'results', hidden: true, 'aria-live': 'polite' });
  const go = () => {
    clearTimeout(timer);
    timer = setTimeout(() => run(box.value, inFiles.checked, results), WAIT_MS);
  };
  box.addEventListener('input', go);
  inFiles.addEventListener('change', go);
  bar.prepend(box, label);
  $('main').before(results);
  const q = urlQuery();
  if (q) {
    box.value = q;
    inFiles.checked = new URLSearchParams(location.search).get('content') === '1';
    return run(q, inFiles.checked, results);
  }
}

async function run(text, content, results) {
  const mine = ++asked;
  const list = $('#list');
  if (text.trim().length < 2) {
    results.hidden = true;
    results.replaceChildren();
    if (list) list.hidden = false;
    return;
  }
  let url = here + '?q=' + encodeURIComponent(text) + '&format=json';
  if (content) url += '&content=1';
  const r = await api(withShare(url));
  if (mine !== asked) return; // a newer query is on its way
  const body = r.ok ? await r.json().catch(() => null) : null;
  if (mine !== asked) return;
  results.replaceChildren();
  results.hidden = false;
  if (list) list.hidden = true;
  if (!body || !Array.isArray(body.entries)) {
    results.append(h('p', { class: 'empty' }, 'Search failed (' + r.status + ').'));
    return;
  }
  if (!body.entries.length) {
    results.append(h('p', { class: 'empty', id: 'no-results' }, 'Nothing found below this folder.'));
    return;
  }
  const depth = here.split('/').filter(Boolean).length - (document.body.dataset.base || '').split('/').filter(Boolean).length;
  const rows = body.entries.map((e) => {
    const rel = e.path.split('/').filter(Boolean).slice(depth).join('/');
    const dir = e.type === 'dir';
    const when = e.modified ? h('time', { datetime: e.modified, title: e.modified }, dtf.format(Date.parse(e.modified))) : '';
    return h(
      'tr',
      dir ? { class: 'd' } : {},
      h('td', { class: 'n' }, h('a', { href: withShare(encPath(rel) + (dir ? '/' : '')) }, rel + (dir ? '/' : ''))),
      h('td', { class: 's' }, dir ? '' : humanSize(e.size)),
      h('td', { class: 'm' }, when),
    );
  });
  const more = body.next ? h('p', { class: 'note' }, 'More results: type more of the name.') : '';
  results.append(h('table', { id: 'found', 'aria-label': 'Search results' }, h('tbody', {}, ...rows)), more);
}
