// "Recently deleted": what was deleted or overwritten at or below this
// folder that the asker could delete here now (`GET /-/trash/PATH`), each
// with Restore (`POST /-/trash?restore=ID`, beside under a new name when
// the name is taken); and the folder's quota bar (`GET /-/quota/PATH`).
import { api, withAuth } from './api.js';
import { base, canDelete, isDir, path, users } from './context.js';
import { ask, failure, toast } from './dialogs.js';
import { $, dtf, enc, h, humanSize } from './dom.js';
import { reloadSoon } from './listing.js';

const TRASH = base + '/-/trash';
const QUOTA = base + '/-/quota';
let box = null;

/** The quota bar under the toolbar, when a quota covers this folder (no
 * sign-in is asked for it). */
export async function setupQuota() {
  // Quotas are set in a rules file: without users, none.
  if (!isDir || !users) return;
  const r = await fetch(QUOTA + path, { headers: withAuth({ Accept: 'application/json' }), cache: 'no-store' });
  if (r.status !== 200) return; // 204: no quota covers the folder
  const q = await r.json();
  const total = q.used + q.available;
  const bar = h(
    'div',
    { id: 'quota' },
    h('progress', { max: String(total), value: String(q.used), 'aria-label': 'Quota used' }),
    h('span', {}, `${humanSize(q.used)} of ${humanSize(total)} used · ${humanSize(q.available)} left`),
  );
  const main = $('main');
  main.parentNode.insertBefore(bar, main);
}

/** The toolbar's "Recently deleted" button, where the asker deletes. */
export function trashButton() {
  if (!canDelete || !isDir) return '';
  return h('button', { type: 'button', id: 'trash-btn', 'aria-expanded': 'false', onclick: (ev) => toggleTrash(ev.currentTarget) }, 'Recently deleted');
}

async function toggleTrash(btn) {
  if (box) {
    box.remove();
    box = null;
    btn.setAttribute('aria-expanded', 'false');
    return;
  }
  box = h('section', { id: 'trash', 'aria-label': 'Recently deleted' }, h('p', {}, 'Loading…'));
  btn.setAttribute('aria-expanded', 'true');
  const main = $('main');
  main.parentNode.insertBefore(box, main);
  await showTrash();
}

async function showTrash() {
  const here = box;
  if (!here) return;
  const r = await api(TRASH + path, { headers: { Accept: 'application/json' }, cache: 'no-store' });
  if (!r.ok) {
    here.replaceChildren(h('p', { class: 'error' }, await failure(r, 'Could not list what was deleted')));
    return;
  }
  const { entries } = await r.json();
  const head = h('p', {}, h('strong', {}, 'Recently deleted'), entries.length ? ` · ${entries.length}` : '');
  if (!entries.length) {
    here.replaceChildren(head, h('p', { class: 'note', id: 'trash-none' }, 'Nothing deleted here lately.'));
    return;
  }
  const body = h('tbody');
  for (const e of entries) {
    const shown = decodeURIComponent(e.path) + (e.folder ? '/' : '');
    const size = e.folder ? `${e.files} files, ${humanSize(e.size)}` : humanSize(e.size);
    body.append(
      h(
        'tr',
        { 'data-id': e.id },
        h('td', { class: 'l' }, shown, ` · ${size}`),
        h('td', { class: 'm' }, h('time', { datetime: new Date(e.deleted * 1000).toISOString() }, dtf.format(e.deleted * 1000))),
        h('td', { class: 'x' }, h('button', { type: 'button', class: 'restore', onclick: () => restore(e) }, 'Restore')),
      ),
    );
  }
  here.replaceChildren(head, h('table', { 'aria-label': 'Recently deleted' }, body));
}

async function restore(e) {
  const name = decodeURIComponent(e.path.split('/').pop());
  let r = await api(TRASH + '?restore=' + enc(e.id), { method: 'POST' });
  if (r.status === 409) {
    const other = await ask({
      title: `Something is at "${name}" now. Restore it beside, as:`,
      input: { label: 'New name', value: 'restored ' + name },
      ok: 'Restore',
    });
    if (!other) return;
    r = await api(TRASH + '?restore=' + enc(e.id) + '&as=' + enc(other), { method: 'POST' });
  }
  if (r.ok) {
    toast(`Restored "${name}"`);
    reloadSoon();
  } else {
    toast(await failure(r, 'Could not restore it'));
  }
  await showTrash();
}
