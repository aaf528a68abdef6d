// A row's actions menu (the ⋯ button): Open or Download, Copy link, Share
// link…, archives of a folder, Rename…, Delete…, as the rights allow;
// arrow keys move through it, Escape closes it.
import { remove, rename } from './actions.js';
import { canDelete, canShare, canWrite, locked } from './context.js';
import { copyLink } from './dialogs.js';
import { doc, h } from './dom.js';
import { archiveLink, saveWithToken } from './downloads.js';
import { link, pathOf } from './listing.js';
import { shareLink } from './share.js';

let menu = null;

function closeMenu(refocus) {
  if (!menu) return;
  const m = menu;
  menu = null;
  m.remove();
  if (refocus && m.wsButton) m.wsButton.focus();
}

/** Open the menu of entry `e` under its button `btn`. */
export function openMenu(e, btn) {
  closeMenu(false);
  const items = [];
  if (e.dir) {
    items.push(h('a', { href: link(e), class: 'btn', role: 'menuitem' }, 'Open'));
  } else {
    const dl = h('a', { href: link(e), download: e.name, class: 'btn', role: 'menuitem' }, 'Download');
    if (locked) dl.addEventListener('click', (ev) => (ev.preventDefault(), saveWithToken(link(e), e.name)));
    items.push(dl);
  }
  const item = (label, fn, cls) =>
    h('button', { type: 'button', role: 'menuitem', class: cls || false, onclick: () => (closeMenu(true), fn()) }, label);
  items.push(item('Copy link', () => copyLink(new URL(link(e), location.href).href)));
  if (canShare) items.push(item('Share link…', () => shareLink(e)));
  if (e.dir) for (const f of ['zip', 'tar']) items.push(archiveLink(pathOf(e), e.name, f, 'Download as ' + f, 'menuitem'));
  // A rename is a MOVE: it takes both rights.
  if (canWrite && canDelete) items.push(item('Rename…', () => rename(e)));
  if (canDelete) items.push(item('Delete…', () => remove(e), 'danger'));
  menu = h('div', { class: 'menu', role: 'menu', 'aria-label': 'Actions for ' + e.name }, ...items);
  menu.wsButton = btn;
  doc.body.append(menu);
  const r = btn.getBoundingClientRect();
  menu.style.top = window.scrollY + r.bottom + 4 + 'px';
  menu.style.left = Math.max(8, window.scrollX + r.right - menu.offsetWidth) + 'px';
  menu.addEventListener('keydown', (ev) => {
    const i = items.indexOf(doc.activeElement);
    if (ev.key === 'Escape') closeMenu(true);
    else if (ev.key === 'ArrowDown') items[(i + 1) % items.length].focus();
    else if (ev.key === 'ArrowUp') items[(i - 1 + items.length) % items.length].focus();
    else if (ev.key === 'Tab') closeMenu(false);
    else return;
    ev.preventDefault();
  });
  items[0].focus();
}

/** A click outside an open menu closes it. */
export function setupMenus() {
  doc.addEventListener('click', (ev) => {
    if (menu && !menu.contains(ev.target) && !ev.target.closest('button.act')) closeMenu(false);
  });
}
