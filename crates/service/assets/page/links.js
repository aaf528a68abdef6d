// "Links": the asker's live share links at or below this folder (`GET
// /-/shares/PATH`), each with Copy and Revoke (`DELETE ?link=TOKEN`).
import { api } from './api.js';
import { path, SHARES } from './context.js';
import { ask, copyLink, failure, toast } from './dialogs.js';
import { $, dtf, enc, h } from './dom.js';

let linksBox = null;

/** Open or close the list under the toolbar (`btn` is the Links button). */
export async function toggleLinks(btn) {
  if (linksBox) {
    linksBox.remove();
    linksBox = null;
    btn.setAttribute('aria-expanded', 'false');
    return;
  }
  linksBox = h('section', { id: 'links', 'aria-label': 'Share links' }, h('p', {}, 'Loading links…'));
  btn.setAttribute('aria-expanded', 'true');
  const main = $('main');
  main.parentNode.insertBefore(linksBox, main);
  await showLinks();
}

/** Read the list again if it is open (a link was made). */
export function refreshLinks() {
  if (linksBox) showLinks();
}

async function showLinks() {
  const box = linksBox;
  if (!box) return;
  const r = await api(SHARES + path, { headers: { Accept: 'application/json' }, cache: 'no-store' });
  if (!r.ok) {
    box.replaceChildren(h('p', { class: 'error' }, await failure(r, 'Could not list the links')));
    return;
  }
  const list = await r.json();
  const head = h('p', {}, h('strong', {}, 'Share links here'), list.length ? ` · ${list.length}` : '');
  if (!list.length) {
    box.replaceChildren(head, h('p', { class: 'note', id: 'links-none' }, 'No live links at or below this folder.'));
    return;
  }
  const body = h('tbody');
  for (const j of list) {
    const url = new URL(j.path + '?share=' + j.share, location.href).href;
    const kind = j.rights.includes('r') ? 'read' : 'upload only';
    const copy = h('button', { type: 'button', class: 'copy', onclick: () => copyLink(url) }, 'Copy');
    const revoke = h('button', { type: 'button', class: 'danger revoke', onclick: () => revokeLink(j) }, 'Revoke');
    body.append(
      h(
        'tr',
        { 'data-id': j.id },
        h('td', { class: 'l' }, h('a', { href: url }, decodeURIComponent(j.path)), ` · ${kind}`),
        h('td', { class: 'm' }, h('time', { datetime: new Date(j.expires * 1000).toISOString() }, 'until ' + dtf.format(j.expires * 1000))),
        h('td', { class: 'x' }, copy, revoke),
      ),
    );
  }
  box.replaceChildren(head, h('table', { 'aria-label': 'Share links' }, body));
}

async function revokeLink(j) {
  const ok = await ask({ title: `Revoke the link to "${decodeURIComponent(j.path)}"? It stops working at once.`, ok: 'Revoke', danger: true });
  if (!ok) return;
  const r = await api(SHARES + path + '?link=' + enc(j.share), { method: 'DELETE' });
  if (r.ok) toast('Link revoked');
  else toast(await failure(r, 'Could not revoke the link'));
  await showLinks();
}
