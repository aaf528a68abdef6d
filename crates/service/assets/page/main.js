// wirespeed's folder page: enhances the server-rendered listing (local
// times, sorting, filter), uploads files (plain PUT, or tus for large ones
// so a dropped network resumes instead of restarting) and manages them
// (WebDAV MKCOL and MOVE, DELETE). One module per concern, loaded by
// ../page.js; this one starts them in order.
import { askToken, currentToken } from './api.js';
import { canWrite, here, isDir, locked, uploadOnly, users, withShare } from './context.js';
import { toast } from './dialogs.js';
import { $, doc } from './dom.js';
import { saveWithToken } from './downloads.js';
import { setupDrop } from './drop.js';
import { openViewer } from './gallery.js';
import { onOpen } from './grid.js';
import { buildTable, link, load, render, setupTable, shownNow, takeServerRows } from './listing.js';
import { openMenu, setupMenus } from './menus.js';
import { setupUser, signIn } from './signin.js';
import { searchOn, setupSearch, urlQuery } from './search.js';
import { setupBar } from './toolbar.js';
import { setupQuota } from './trash.js';
import { prepareResume } from './tus.js';

const root = doc.documentElement;

async function init() {
  const rows = $('#rows');
  if (!rows) return;
  // Breadcrumbs inside a link's folder go on through the link.
  for (const a of doc.querySelectorAll('nav.crumbs a')) a.setAttribute('href', withShare(a.getAttribute('href')));
  if (uploadOnly) {
    // Nothing here reads: no table, no listing to fetch, no sign-in first.
    rows.remove();
    for (const el of doc.querySelectorAll('#empty, footer form.json')) el.remove();
    setupBar();
    setupDrop();
    setupUser();
    prepareResume();
    window.wirespeedReadyAt = performance.now();
    root.dataset.ready = '1';
    return;
  }
  if (searchOn && urlQuery()) {
    // A search's page (?q=): its rows are paths, not this folder's names.
    rows.remove();
    setupBar();
    setupUser();
    await setupSearch();
    window.wirespeedReadyAt = performance.now();
    root.dataset.ready = '1';
    return;
  }
  buildTable();
  setupTable(openMenu);
  // A picture, a video or a text opens in the viewer (a modified click,
  // or any other file, goes where its link does).
  onOpen($('main'), (e) => openViewer(e, shownNow(), link));
  setupMenus();
  setupBar();
  setupSearch();
  if (canWrite) {
    setupDrop();
    prepareResume();
  }
  setupUser();
  if (locked && users) {
    // A path that needs a user: sign in, then ask again with the cookie.
    root.dataset.ready = '1';
    if (await signIn()) location.reload();
    return;
  }
  if (locked) {
    // A private server answered the navigation without the listing.
    if (!currentToken() && !(await askToken())) return;
    if (isDir) await load();
    else await saveWithToken(here, decodeURIComponent(here.split('/').pop()));
  } else {
    setupQuota().catch(() => {}); // a bar, if a quota covers the folder
    const unread = takeServerRows(rows);
    rows.remove(); // the shown table replaces it
    const all = render();
    window.wirespeedFirstRowsAt = performance.now();
    await all;
    // Markup this script cannot read (another version): the JSON instead.
    if (unread) await load();
  }
  window.wirespeedReadyAt = performance.now();
  root.dataset.ready = '1';
}

init().catch((err) => {
  root.classList.add('failed'); // page.css shows the server's table again
  toast('The page failed to start: ' + err.message);
});
