// wirespeed's folder page: enhances the server-rendered listing (local
// times, sorting, filter), uploads files (plain PUT, or tus 1.0 for large
// ones so a dropped network resumes instead of restarting) and manages
// them (WebDAV MKCOL and MOVE, DELETE). Names only ever reach the page as
// text (textContent, attributes), never as markup.
'use strict';
(() => {
  const doc = document;
  const root = doc.documentElement;
  root.classList.add('js');
  const TOKEN_KEY = 'wirespeed-token';
  const BIG = 8 * 1024 * 1024; // files above this go through tus
  const CHUNK = 8 * 1024 * 1024; // bytes per tus PATCH
  const PARALLEL = 3;
  const here = location.pathname;
  const isDir = here.endsWith('/');
  const locked = doc.body.dataset.locked === '1';
  // A server with users: the page signs in with its own form (a session
  // cookie), never the browser's Basic dialog; data-user names who is in.
  const users = doc.body.dataset.users === '1';
  const user = doc.body.dataset.user || '';
  // What the server takes (listing.rs writes it from page.rs `page_rights`):
  // the page offers only those actions.
  const can = new Set((doc.body.dataset.can || '').split(' '));
  const canRead = can.has('read');
  const canWrite = can.has('write');
  const canDelete = can.has('delete');
  // An upload link or a drop box: the page offers the upload and nothing
  // that reads (no names, no archives, no reload of the listing).
  const uploadOnly = canWrite && !canRead;
  // Opened through a link to a folder: how deep the link's own folder is
  // (no way up from there; the server links no breadcrumb above it).
  const top = Number(doc.body.dataset.top || 0);
  const depth = here.split('/').filter(Boolean).length - (isDir ? 0 : 1);
  // "Share link…" on the rows (share links on, the asker may mint them).
  const canShare = doc.body.dataset.share === '1';
  // Opened through a share link: every URL of the page carries it on.
  const shareToken = new URLSearchParams(location.search).get('share');
  const withShare = (url) => (shareToken ? url + (url.includes('?') ? '&' : '?') + 'share=' + enc(shareToken) : url);
  const $ = (sel, el = doc) => el.querySelector(sel);
  const enc = (name) => encodeURIComponent(name);
  const encPath = (p) => p.split('/').map(enc).join('/');

  /** An element with attributes and text or element children. */
  function h(tag, attrs, ...kids) {
    const el = doc.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === false || v == null) continue;
      if (k === 'value') el.value = v;
      else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? '' : v);
    }
    el.append(...kids);
    return el;
  }

  function humanSize(n) {
    if (n < 1024) return n + ' B';
    const units = ['KiB', 'MiB', 'GiB', 'TiB', 'PiB', 'EiB'];
    let v = n / 1024;
    let i = 0;
    while (v >= 1024 && i < units.length - 1) {
      v /= 1024;
      i++;
    }
    return v.toFixed(1) + ' ' + units[i];
  }

  function duration(s) {
    if (!isFinite(s)) return '';
    s = Math.round(s);
    const m = Math.floor(s / 60);
    const hh = Math.floor(m / 60);
    const pad = (x) => String(x).padStart(2, '0');
    return hh ? `${hh}:${pad(m % 60)}:${pad(s % 60)}` : `${m}:${pad(s % 60)}`;
  }

  const dtf = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
  const collator = new Intl.Collator(undefined, { numeric: true, sensitivity: 'base' });

  // --- messages and dialogs ---------------------------------------------------
  let toastTimer = 0;
  function toast(text) {
    let t = $('#toast');
    if (!t) {
      t = h('div', { id: 'toast', role: 'status', 'aria-live': 'polite' });
      doc.body.append(t);
    }
    t.textContent = text;
    t.hidden = false;
    clearTimeout(toastTimer);
    toastTimer = setTimeout(() => (t.hidden = true), 5000);
  }

  /** Show dialog `d` holding `form`, with Cancel and `okb` as its last
   * row: resolves to `value()` when the form is sent, null when closed. */
  function modal(d, form, okb, value, focus) {
    return new Promise((resolve) => {
      const cancel = h('button', { type: 'button' }, 'Cancel');
      form.append(h('div', { class: 'row' }, cancel, okb));
      d.append(form);
      doc.body.append(d);
      let result = null;
      cancel.addEventListener('click', () => d.close());
      form.addEventListener('submit', (ev) => {
        ev.preventDefault();
        result = value();
        d.close();
      });
      d.addEventListener('close', () => {
        d.remove();
        resolve(result);
      });
      d.showModal();
      focus();
    });
  }

  /** A modal asking for a value (or a yes): resolves to it, or null. */
  function ask({ title, input, ok, danger }) {
    const d = h('dialog', { 'aria-label': title });
    const form = h('form', { method: 'dialog' });
    form.append(h('p', {}, h('strong', {}, title)));
    let field = null;
    if (input) {
      field = h('input', {
        type: input.type || 'text',
        'aria-label': input.label,
        name: 'value',
        value: input.value || '',
        autocomplete: input.autocomplete || 'off',
        required: true,
      });
      form.append(field);
    }
    const okb = h('button', { type: 'submit', class: danger ? 'danger' : 'primary' }, ok);
    return modal(
      d,
      form,
      okb,
      () => (field ? field.value : true),
      () => {
        if (field) {
          field.focus();
          if (input.select != null) field.setSelectionRange(0, input.select);
        } else {
          okb.focus();
        }
      },
    );
  }

  // --- the token ----------------------------------------------------------------
  let token = sessionStorage.getItem(TOKEN_KEY) || '';
  let asking = null;
  function withAuth(headers) {
    // The marker: the server answers the page's 401s without a Basic
    // challenge (session.rs, respond.rs).
    const out = Object.assign({ 'X-Wirespeed-Page': '1' }, headers);
    if (token) out.Authorization = 'Bearer ' + token;
    return out;
  }
  /** Ask for the token (or, with users, sign in) once for every request
   * that got a 401 meanwhile. */
  function askToken() {
    if (users) {
      if (!asking) asking = signIn().then((ok) => ((asking = null), ok));
      return asking;
    }
    if (!asking) {
      const again = !!token;
      asking = ask({
        title: again ? 'That token was not accepted. Token:' : 'This server needs a token',
        input: { type: 'password', label: 'Token', autocomplete: 'current-password' },
        ok: 'Continue',
      }).then((v) => {
        asking = null;
        if (v) {
          token = v.trim();
          sessionStorage.setItem(TOKEN_KEY, token);
        }
        return !!v;
      });
    }
    return asking;
  }
  // --- signing in (servers with users) -------------------------------------------
  /** The sign-in form: resolves true once the server set the session
   * cookie, false when cancelled. A refusal is shown in the form. */
  function signIn() {
    return new Promise((resolve) => {
      const d = h('dialog', { 'aria-label': 'Sign in', id: 'signin' });
      const name = h('input', { type: 'text', name: 'username', 'aria-label': 'User name', autocomplete: 'username', required: true });
      const pw = h('input', { type: 'password', name: 'password', 'aria-label': 'Password', autocomplete: 'current-password', required: true });
      const error = h('p', { class: 'error', id: 'signin-error', role: 'alert', hidden: true });
      const cancel = h('button', { type: 'button' }, 'Cancel');
      const okb = h('button', { type: 'submit', class: 'primary' }, 'Sign in');
      const form = h(
        'form',
        { method: 'dialog' },
        h('p', {}, h('strong', {}, 'Sign in')),
        h('label', {}, 'User name ', name),
        h('label', {}, 'Password ', pw),
        error,
        h('div', { class: 'row' }, cancel, okb),
      );
      d.append(form);
      doc.body.append(d);
      let result = false;
      cancel.addEventListener('click', () => d.close());
      form.addEventListener('submit', async (ev) => {
        ev.preventDefault();
        okb.disabled = true;
        error.hidden = true;
        try {
          const r = await fetch('/-/session', {
            method: 'POST',
            headers: { 'Content-Type': 'application/json', 'X-Wirespeed-Page': '1' },
            body: JSON.stringify({ name: name.value, password: pw.value }),
            credentials: 'same-origin',
          });
          if (r.ok) {
            result = true;
            d.close();
            return;
          }
          if (r.status === 401) {
            error.textContent = 'Wrong user name or password.';
          } else if (r.status === 429) {
            // Too many recent failures (here or for this name): nothing was checked.
            error.textContent = `Too many sign-in attempts: try again in ${r.headers.get('Retry-After') || 'a few'} s.`;
          } else {
            error.textContent = await failure(r, 'Could not sign in');
          }
        } catch (err) {
          error.textContent = 'Could not sign in: ' + err.message;
        }
        error.hidden = false;
        okb.disabled = false;
        pw.select();
      });
      d.addEventListener('close', () => {
        d.remove();
        resolve(result);
      });
      d.showModal();
      name.focus();
    });
  }

  async function signOut() {
    await fetch('/-/session', { method: 'DELETE', headers: { 'X-Wirespeed-Page': '1' }, credentials: 'same-origin' });
    location.reload();
  }

  /** The header's corner: who is signed in and Sign out, or Sign in. */
  function setupUser() {
    if (!users) return;
    const header = $('header');
    if (!header) return;
    const box = h('div', { id: 'who' });
    if (user) {
      box.append(
        h('span', {}, 'Signed in as ', h('strong', { id: 'user-name' }, user)),
        h('button', { type: 'button', id: 'signout-btn', onclick: signOut }, 'Sign out'),
      );
    } else {
      box.append(
        h('button', {
          type: 'button',
          id: 'signin-btn',
          class: 'primary',
          onclick: async () => {
            if (await signIn()) location.reload();
          },
        }, 'Sign in'),
      );
    }
    header.append(box);
  }

  /** fetch with the token; a 401 asks for it and tries again. */
  async function api(url, opts = {}) {
    for (;;) {
      const r = await fetch(url, Object.assign({}, opts, { headers: withAuth(opts.headers) }));
      if (r.status !== 401 || !(await askToken())) return r;
    }
  }
  async function failure(r, what) {
    let text = '';
    try {
      text = (await r.text()).trim();
    } catch (_) {
      // the body is only a detail
    }
    return `${what}: ${r.status}${text ? ' — ' + text.slice(0, 200) : ''}`;
  }

  // --- the listing ------------------------------------------------------------------
  // The server's rows arrive as a plain table (#rows, hidden by the style
  // sheet when scripts run, so it is never laid out); the shown table is
  // built here, the first screenful at once and the rest in slices, so a
  // folder of 10,000 entries shows in a fraction of its full layout time.
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
  // Names ticked for "Download selected": kept across sorting, filtering
  // and reloads (a name that went away is dropped).
  const selected = new Set();
  let selLink = null;

  const link = (e) => withShare(here + enc(e.name) + (e.dir ? '/' : ''));
  /** A row's path on the server, without any share token. */
  const pathOf = (e) => here + enc(e.name) + (e.dir ? '/' : '');

  function buildTable() {
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
    if (here !== '/' && depth > top) {
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
    tick.addEventListener('change', () => {
      if (tick.checked) selected.add(e.name);
      else selected.delete(e.name);
      updateSelection();
    });
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

  /** The entries in the server's rows (the cells listing.rs writes:
   * name, modified with its ISO time in data-t, size in bytes). */
  function parseRows(rows) {
    const out = [];
    const body = rows.tBodies[0];
    if (!body) return out;
    for (const tr of body.rows) {
      const [n, m, s] = tr.cells;
      const a = n && n.firstElementChild;
      if (!a || !m || !s || tr.classList.contains('up')) continue;
      const dir = tr.classList.contains('d');
      const name = dir ? a.textContent.slice(0, -1) : a.textContent;
      const iso = m.dataset.t || null;
      out.push({ name, dir, size: dir ? 0 : Number(s.textContent) || 0, iso, mtime: iso ? Date.parse(iso) : null, tr: null });
    }
    return out;
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
  function render() {
    const gen = ++generation;
    const shown = filterText
      ? entries.filter((e) => e.name.toLowerCase().includes(filterText))
      : entries.slice();
    shown.sort(compare);
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

  async function load() {
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
    const names = new Set(entries.map((e) => e.name));
    for (const n of selected) if (!names.has(n)) selected.delete(n);
    updateSelection();
    await render();
  }

  let reloadTimer = 0;
  function reloadSoon() {
    clearTimeout(reloadTimer);
    reloadTimer = setTimeout(load, 250);
  }

  // --- row actions --------------------------------------------------------------------
  let menu = null;
  function closeMenu(refocus) {
    if (!menu) return;
    const m = menu;
    menu = null;
    m.remove();
    if (refocus && m.wsButton) m.wsButton.focus();
  }

  function openMenu(e, btn) {
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

  async function copyLink(url) {
    try {
      await navigator.clipboard.writeText(url);
      toast('Link copied');
    } catch (_) {
      // No clipboard (a plain-http origin, or denied): show the link to copy.
      await ask({ title: 'Copy this link', input: { value: url, label: 'Link', select: url.length }, ok: 'Done' });
    }
  }

  /** "Share link…": an expiry (and, for a folder one may write to,
   * upload-only), minted by `POST /-/shares/PATH`, shown with Copy. */
  async function shareLink(e) {
    const d = h('dialog', { 'aria-label': 'Share link', id: 'share' });
    const expiry = h(
      'select',
      { 'aria-label': 'Expires after', name: 'expires' },
      h('option', { value: String(86400) }, '1 day'),
      h('option', { value: String(7 * 86400), selected: true }, '7 days'),
      h('option', { value: String(30 * 86400) }, '30 days'),
    );
    const upload = h('input', { type: 'checkbox', name: 'upload' });
    const okb = h('button', { type: 'submit', class: 'primary' }, 'Create link');
    const form = h(
      'form',
      { method: 'dialog' },
      h('p', {}, h('strong', {}, `Share "${e.name}${e.dir ? '/' : ''}"`)),
      h('label', {}, 'Expires after ', expiry),
    );
    if (e.dir && canWrite) form.append(h('label', { class: 'check' }, upload, ' Upload only (others add files, nothing is read)'));
    const choice = await modal(
      d,
      form,
      okb,
      () => ({ expires: expiry.value, upload: upload.checked }),
      () => expiry.focus(),
    );
    if (!choice) return;
    const q = '?expires=' + choice.expires + (choice.upload ? '&upload' : '');
    const r = await api('/-/shares' + pathOf(e) + q, { method: 'POST' });
    if (r.status !== 201) return toast(await failure(r, 'Could not make a link'));
    const j = await r.json();
    const url = new URL(j.path + '?share=' + j.share, location.href).href;
    if (linksBox) showLinks();
    await new Promise((resolve) => {
      const d = h('dialog', { 'aria-label': 'Share link', id: 'share-made' });
      const field = h('input', { type: 'text', id: 'share-link', readonly: true, value: url, 'aria-label': 'Link' });
      const copy = h('button', { type: 'button', class: 'primary', id: 'share-copy' }, 'Copy');
      const done = h('button', { type: 'button' }, 'Done');
      const until = new Date(j.expires * 1000);
      copy.addEventListener('click', async () => {
        field.select();
        try {
          await navigator.clipboard.writeText(url);
          copy.textContent = 'Copied';
        } catch (_) {
          // No clipboard (plain http, or denied): the text stays selected.
          copy.textContent = doc.execCommand && doc.execCommand('copy') ? 'Copied' : 'Press Ctrl+C';
        }
      });
      done.addEventListener('click', () => d.close());
      d.append(
        h(
          'form',
          { method: 'dialog' },
          h('p', {}, h('strong', {}, choice.upload ? 'Upload link' : 'Share link'), ` until ${dtf.format(until)}`),
          field,
          h('div', { class: 'row' }, done, copy),
        ),
      );
      doc.body.append(d);
      d.addEventListener('close', () => {
        d.remove();
        resolve();
      });
      d.showModal();
      field.select();
    });
  }

  // --- the links made here -----------------------------------------------------------
  /** "Links": the asker's live links at or below this folder (`GET
   * /-/shares/PATH`), each with Copy and Revoke (`DELETE ?link=TOKEN`). */
  let linksBox = null;
  async function toggleLinks(btn) {
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

  async function showLinks() {
    const box = linksBox;
    if (!box) return;
    const r = await api('/-/shares' + here, { headers: { Accept: 'application/json' }, cache: 'no-store' });
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
    const r = await api('/-/shares' + here + '?link=' + enc(j.share), { method: 'DELETE' });
    if (r.ok) toast('Link revoked');
    else toast(await failure(r, 'Could not revoke the link'));
    await showLinks();
  }

  async function rename(e) {
    const dot = e.dir ? -1 : e.name.lastIndexOf('.');
    const v = await ask({
      title: 'Rename ' + (e.dir ? 'folder' : 'file'),
      input: { value: e.name, label: 'New name', select: dot > 0 ? dot : e.name.length },
      ok: 'Rename',
    });
    if (!v || v === e.name) return;
    if (v.includes('/')) return toast('A name cannot contain "/"');
    const r = await api(link(e), {
      method: 'MOVE',
      headers: { Destination: here + enc(v) + (e.dir ? '/' : ''), Overwrite: 'F' },
    });
    if (r.ok) toast(`Renamed to ${v}`);
    else if (r.status === 412) toast(`"${v}" already exists`);
    else toast(await failure(r, 'Rename failed'));
    load();
  }

  async function remove(e) {
    const ok = await ask({ title: `Delete "${e.name}"${e.dir ? ' (an empty folder)' : ''}?`, ok: 'Delete', danger: true });
    if (!ok) return;
    // Depth 0: a folder goes only if empty (a plain WebDAV DELETE takes it whole).
    const r = await api(link(e), { method: 'DELETE', headers: { Depth: '0' } });
    if (r.ok) toast(`Deleted ${e.name}`);
    else if (r.status === 409) toast('Only an empty folder can be deleted');
    else toast(await failure(r, 'Delete failed'));
    load();
  }

  async function newFolder() {
    const v = await ask({ title: 'New folder', input: { label: 'Folder name' }, ok: 'Create' });
    if (!v) return;
    if (v.includes('/')) return toast('A name cannot contain "/"');
    const r = await api(here + enc(v) + '/', { method: 'MKCOL' });
    if (r.status === 201) toast(`Created ${v}`);
    else if (r.status === 405) toast(`"${v}" already exists`);
    else toast(await failure(r, 'Could not create the folder'));
    load();
  }

  /** A folder as one archive the server builds (`?archive=zip|tar`). */
  function archiveLink(url, name, format, label, role) {
    const href = withShare(url + '?archive=' + format);
    const file = (name || 'files') + '.' + format;
    const a = h('a', { href, download: file, class: 'btn', role: role || false }, label);
    if (locked) a.addEventListener('click', (ev) => (ev.preventDefault(), saveWithToken(href, file)));
    return a;
  }

  /** The ticked rows as one zip (`?archive=zip&name=…`): shown once a row
   * is ticked, its link and count follow the ticks. */
  function selectionLink(folder) {
    const file = (folder || 'files') + '.zip';
    const a = h('a', { href: here, download: file, class: 'btn', id: 'download-selected', hidden: true }, '');
    if (locked) a.addEventListener('click', (ev) => (ev.preventDefault(), saveWithToken(a.href, file)));
    return a;
  }

  function updateSelection() {
    if (!selLink) return;
    const names = Array.from(selected).sort(collator.compare);
    selLink.hidden = !names.length;
    selLink.href = withShare(here + '?archive=zip' + names.map((n) => '&name=' + enc(n)).join(''));
    selLink.textContent = `Download ${names.length} selected (zip)`;
  }

  /** A private server's file: fetched with the token, saved from memory. */
  async function saveWithToken(url, name) {
    const r = await api(url);
    if (!r.ok) return toast(await failure(r, 'Download failed'));
    const blob = URL.createObjectURL(await r.blob());
    const a = h('a', { href: blob, download: name });
    doc.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(blob), 60000);
  }

  // --- uploads ------------------------------------------------------------------------
  class Cancelled extends Error {}
  class NetError extends Error {}
  const items = [];
  let active = 0;
  let panel = null;
  const samples = []; // [time, bytes sent in total] over the last seconds

  function ensurePanel() {
    if (panel) return panel;
    const bar = h('progress', { max: 1, value: 0, 'aria-label': 'All uploads' });
    const text = h('span', { class: 'text' });
    const clear = h('button', { type: 'button', onclick: clearFinished }, 'Clear finished');
    const list = h('ul');
    panel = h('section', { id: 'uploads', 'aria-label': 'Uploads' }, h('div', { class: 'total' }, text, clear, bar), list);
    panel.wsBar = bar;
    panel.wsText = text;
    panel.wsList = list;
    const main = $('main');
    main.parentNode.insertBefore(panel, main);
    return panel;
  }

  function clearFinished() {
    for (let i = items.length - 1; i >= 0; i--) {
      if (items[i].state === 'done' || items[i].state === 'cancelled') {
        items[i].li.remove();
        items.splice(i, 1);
      }
    }
    if (!items.length) {
      panel.remove();
      panel = null;
    } else updateTotal();
  }

  function addFiles(files) {
    if (!files.length) return;
    const p = ensurePanel();
    for (const { file, path } of files) {
      const it = { file, path, loaded: 0, state: 'queued', xhr: null, loc: null, t0: 0, wake: null };
      it.bar = h('progress', { max: file.size || 1, value: 0, 'aria-label': path });
      it.info = h('span', { class: 'info' }, 'Waiting');
      it.cancel = h('button', { type: 'button', onclick: () => cancel(it) }, 'Cancel');
      it.retry = h('button', { type: 'button', hidden: true, onclick: () => retry(it) }, 'Retry');
      it.li = h('li', { class: 'queued' }, h('span', { class: 'name' }, path), it.bar, it.info, h('span', { class: 'ctl' }, it.cancel, it.retry));
      p.wsList.append(it.li);
      items.push(it);
    }
    pump();
  }

  function setState(it, state, info) {
    it.state = state;
    it.li.className = state;
    if (info != null) it.info.textContent = info;
    const live = state === 'queued' || state === 'active';
    it.cancel.hidden = !live;
    it.retry.hidden = live || state === 'done' || it.permanent;
  }

  function cancel(it) {
    const wasActive = it.state === 'active';
    setState(it, 'cancelled', 'Cancelled');
    if (it.xhr) it.xhr.abort();
    if (it.wake) it.wake();
    if (it.loc) {
      // Free the partial upload on the server; this upload is not resumed.
      fetch(withShare(it.loc), { method: 'DELETE', headers: withAuth({ 'Tus-Resumable': '1.0.0' }) }).catch(() => {});
      localStorage.removeItem(resumeKey(it));
      it.loc = null;
    }
    if (!wasActive) updateTotal();
  }

  function retry(it) {
    if (it.permanent) return;
    it.loaded = 0;
    setState(it, 'queued', 'Waiting');
    pump();
  }

  function pump() {
    while (active < PARALLEL) {
      const it = items.find((i) => i.state === 'queued');
      if (!it) break;
      run(it);
    }
    updateTotal();
  }

  async function run(it) {
    active++;
    setState(it, 'active', 'Starting');
    it.t0 = performance.now();
    it.startLoaded = 0;
    try {
      if (it.file.size > BIG) await tusUpload(it);
      else await putUpload(it);
      it.loaded = it.file.size;
      it.bar.value = it.file.size;
      setState(it, 'done', `Done · ${humanSize(it.file.size)}`);
      if (!uploadOnly) reloadSoon();
    } catch (err) {
      // A refusal that a retry cannot change gets no Retry button.
      it.permanent = !!err.permanent;
      if (it.state !== 'cancelled') setState(it, 'failed', 'Failed: ' + err.message);
    } finally {
      it.xhr = null;
      active--;
      pump();
    }
  }

  const target = (it) => here + encPath(it.path);

  /** One XHR; resolves with it when any answer arrives. */
  function send(it, method, url, headers, body, onprogress) {
    return new Promise((resolve, reject) => {
      if (it.state === 'cancelled') return reject(new Cancelled('cancelled'));
      const x = new XMLHttpRequest();
      it.xhr = x;
      x.open(method, url);
      for (const [k, v] of Object.entries(withAuth(headers))) x.setRequestHeader(k, v);
      if (onprogress) x.upload.addEventListener('progress', (ev) => onprogress(ev.loaded));
      x.addEventListener('load', () => resolve(x));
      x.addEventListener('error', () => reject(new NetError('the network failed')));
      x.addEventListener('timeout', () => reject(new NetError('timed out')));
      x.addEventListener('abort', () => reject(new Cancelled('cancelled')));
      x.send(body);
    });
  }

  /** Statuses that the same request gets again: no Retry for them. */
  const PERMANENT = new Set([400, 403, 405, 409, 413, 414, 415, 501]);
  function statusError(x, what) {
    const err = new Error(`${what}: ${x.status}${x.responseText ? ' — ' + x.responseText.trim().slice(0, 200) : ''}`);
    err.permanent = PERMANENT.has(x.status);
    return err;
  }

  /** Wait after a network failure: for `online` when the browser is
   * offline, then a back-off that grows with the failures in a row. */
  async function waitForNetwork(it, failures) {
    if (failures > 40) throw new Error('the network stayed down; press Retry');
    it.info.textContent = 'Waiting for the network…';
    await new Promise((resolve) => {
      it.wake = resolve;
      if (!navigator.onLine) window.addEventListener('online', () => resolve(), { once: true });
      else setTimeout(resolve, Math.min(500 * 2 ** Math.min(failures - 1, 5), 15000));
    });
    it.wake = null;
    if (it.state === 'cancelled') throw new Cancelled('cancelled');
  }

  function progress(it, loaded) {
    it.loaded = loaded;
    it.bar.value = loaded;
    const secs = (performance.now() - it.t0) / 1000;
    const rate = secs > 0.2 ? (loaded - it.startLoaded) / secs : 0;
    const left = rate > 0 ? (it.file.size - loaded) / rate : Infinity;
    it.info.textContent =
      `${humanSize(loaded)} of ${humanSize(it.file.size)}` +
      (rate > 0 ? ` · ${humanSize(Math.round(rate))}/s · ${duration(left)} left` : '');
    scheduleTotal();
  }

  async function putUpload(it) {
    for (let failures = 0; ; ) {
      let x;
      try {
        x = await send(it, 'PUT', withShare(target(it)), Object.assign({ 'Content-Type': 'application/octet-stream' }, mtimeOf(it)), it.file, (l) => progress(it, l));
      } catch (err) {
        if (!(err instanceof NetError)) throw err;
        await waitForNetwork(it, ++failures);
        it.t0 = performance.now();
        continue;
      }
      if (x.status === 401 && (await askToken())) continue;
      if (x.status >= 200 && x.status < 300) return;
      throw statusError(x, 'refused');
    }
  }

  /** The file's own date, kept by the server (`X-OC-Mtime`, Unix seconds). */
  const mtimeOf = (it) => (it.file.lastModified > 0 ? { 'X-OC-Mtime': String(Math.floor(it.file.lastModified / 1000)) } : {});

  const resumeKey = (it) => `wirespeed-tus ${target(it)} ${it.file.size} ${it.file.lastModified}`;

  /** The server's offset of a tus upload (null: it is gone). */
  async function tusOffset(it) {
    for (let failures = 0; ; ) {
      try {
        const x = await send(it, 'HEAD', withShare(it.loc), { 'Tus-Resumable': '1.0.0' });
        if (x.status === 401 && (await askToken())) continue;
        if (x.status === 404 || x.status === 410) return null;
        const off = Number(x.getResponseHeader('Upload-Offset'));
        if (x.status < 300 && Number.isSafeInteger(off)) return off;
        throw statusError(x, 'cannot resume');
      } catch (err) {
        if (!(err instanceof NetError)) throw err;
        await waitForNetwork(it, ++failures);
      }
    }
  }

  async function tusCreate(it) {
    const name = it.path.split('/').pop();
    const b64 = btoa(String.fromCharCode(...new TextEncoder().encode(name)));
    for (let failures = 0; ; ) {
      let x;
      try {
        x = await send(it, 'POST', withShare('/-/uploads' + target(it)), Object.assign({
          'Tus-Resumable': '1.0.0',
          'Upload-Length': String(it.file.size),
          'Upload-Metadata': 'filename ' + b64,
        }, mtimeOf(it)));
      } catch (err) {
        if (!(err instanceof NetError)) throw err;
        await waitForNetwork(it, ++failures);
        continue;
      }
      if (x.status === 401 && (await askToken())) continue;
      // No resumable routes on this server: one plain PUT instead.
      if (x.status === 404 || x.status === 405 || x.status === 501) return null;
      const loc = x.getResponseHeader('Location');
      if (x.status !== 201 || !loc) throw statusError(x, 'refused');
      return new URL(loc, location.href).pathname;
    }
  }

  async function tusUpload(it) {
    const key = resumeKey(it);
    it.loc = it.loc || localStorage.getItem(key);
    let offset = 0;
    if (it.loc) {
      const off = await tusOffset(it);
      if (off == null) it.loc = null;
      else offset = off;
    }
    if (!it.loc) {
      it.loc = await tusCreate(it);
      if (!it.loc) return putUpload(it);
      localStorage.setItem(key, it.loc);
    }
    it.startLoaded = offset;
    progress(it, offset);
    let failures = 0;
    while (offset < it.file.size) {
      const end = Math.min(it.file.size, offset + CHUNK);
      const from = offset;
      let x;
      try {
        x = await send(
          it,
          'PATCH',
          withShare(it.loc),
          Object.assign({ 'Tus-Resumable': '1.0.0', 'Upload-Offset': String(from), 'Content-Type': 'application/offset+octet-stream' }, mtimeOf(it)),
          it.file.slice(from, end),
          (l) => progress(it, from + l),
        );
      } catch (err) {
        if (!(err instanceof NetError)) throw err;
        await waitForNetwork(it, ++failures);
        const off = await tusOffset(it);
        if (off == null) throw new Error('the server forgot this upload; press Retry to start over');
        offset = off;
        it.t0 = performance.now();
        it.startLoaded = off;
        continue;
      }
      if (x.status === 401 && (await askToken())) continue;
      if (x.status === 409) {
        const off = await tusOffset(it); // another tab or attempt moved it on
        if (off == null) throw new Error('the server forgot this upload');
        offset = off;
        continue;
      }
      if (x.status === 404 || x.status === 410) {
        localStorage.removeItem(key);
        it.loc = null;
        throw new Error('the server forgot this upload; press Retry to start over');
      }
      if (x.status < 200 || x.status >= 300) throw statusError(x, 'refused');
      const off = Number(x.getResponseHeader('Upload-Offset'));
      offset = Number.isSafeInteger(off) && off > from ? off : end;
      failures = 0;
      progress(it, offset);
    }
    localStorage.removeItem(key);
    it.loc = null;
  }

  let totalQueued = false;
  function scheduleTotal() {
    if (totalQueued) return;
    totalQueued = true;
    requestAnimationFrame(() => {
      totalQueued = false;
      updateTotal();
    });
  }

  function updateTotal() {
    if (!panel) return;
    let total = 0;
    let loaded = 0;
    let done = 0;
    let counted = 0;
    for (const it of items) {
      if (it.state === 'cancelled') continue;
      counted++;
      total += it.file.size;
      loaded += it.state === 'done' ? it.file.size : it.loaded;
      if (it.state === 'done') done++;
    }
    const now = performance.now();
    samples.push([now, loaded]);
    while (samples.length > 2 && now - samples[0][0] > 3000) samples.shift();
    const [t0, b0] = samples[0];
    const rate = now - t0 > 300 ? ((loaded - b0) * 1000) / (now - t0) : 0;
    panel.wsBar.max = total || 1;
    panel.wsBar.value = loaded;
    const running = items.some((i) => i.state === 'active' || i.state === 'queued');
    panel.wsText.textContent =
      `${done} of ${counted} uploaded · ${humanSize(loaded)} of ${humanSize(total)}` +
      (running && rate > 0 ? ` · ${humanSize(Math.round(rate))}/s · ${duration((total - loaded) / rate)} left` : '');
  }

  // --- dropping files and folders ---------------------------------------------------
  async function walk(entry, prefix, out) {
    if (entry.isFile) {
      const file = await new Promise((res, rej) => entry.file(res, rej));
      out.push({ file, path: prefix + entry.name });
    } else if (entry.isDirectory) {
      const reader = entry.createReader();
      for (;;) {
        const batch = await new Promise((res, rej) => reader.readEntries(res, rej));
        if (!batch.length) break;
        for (const child of batch) await walk(child, prefix + entry.name + '/', out);
      }
    }
  }

  /** Files of a drop, with their paths inside dropped folders. */
  async function dropped(dt) {
    const out = [];
    const folders = [];
    // Entries must be taken now: the list is emptied after the event.
    for (const item of Array.from(dt.items || [])) {
      if (item.kind !== 'file') continue;
      const entry = item.webkitGetAsEntry ? item.webkitGetAsEntry() : null;
      if (entry && entry.isDirectory) folders.push(entry);
      else {
        const file = item.getAsFile();
        if (file) out.push({ file, path: file.name });
      }
    }
    if (!out.length && !folders.length) for (const file of Array.from(dt.files || [])) out.push({ file, path: file.name });
    for (const f of folders) await walk(f, '', out);
    return out;
  }

  function setupDrop() {
    let depth = 0;
    const hasFiles = (ev) => ev.dataTransfer && Array.from(ev.dataTransfer.types || []).includes('Files');
    doc.body.append(h('div', { id: 'drop', 'aria-hidden': 'true' }, 'Drop files or folders to upload here'));
    doc.addEventListener('dragenter', (ev) => {
      if (!hasFiles(ev)) return;
      ev.preventDefault();
      depth++;
      doc.body.classList.add('dragging');
    });
    doc.addEventListener('dragover', (ev) => {
      if (!hasFiles(ev)) return;
      ev.preventDefault();
      ev.dataTransfer.dropEffect = 'copy';
    });
    doc.addEventListener('dragleave', () => {
      if (--depth <= 0) {
        depth = 0;
        doc.body.classList.remove('dragging');
      }
    });
    doc.addEventListener('drop', (ev) => {
      ev.preventDefault();
      depth = 0;
      doc.body.classList.remove('dragging');
      if (ev.dataTransfer) dropped(ev.dataTransfer).then(addFiles, (err) => toast('Could not read the drop: ' + err.message));
    });
  }

  // --- the toolbar --------------------------------------------------------------------
  function setupBar() {
    const bar = $('#bar');
    const input = $('#files');
    if (!bar || (canWrite && !input)) return;
    const filter = h('input', { type: 'search', id: 'filter', placeholder: 'Filter', 'aria-label': 'Filter by name' });
    filter.addEventListener('input', () => {
      filterText = filter.value.trim().toLowerCase();
      render();
    });
    const folderInput = h('input', { type: 'file', id: 'folder-files', webkitdirectory: true, hidden: true });
    const pick = (inp) => {
      addFiles(Array.from(inp.files).map((file) => ({ file, path: file.webkitRelativePath || file.name })));
      inp.value = '';
    };
    const folder = decodeURIComponent(here.split('/').filter(Boolean).pop() || '');
    const folderZip = uploadOnly ? null : archiveLink(here, folder, 'zip', 'Download folder (zip)');
    selLink = uploadOnly ? null : selectionLink(folder);
    const links = canShare ? h('button', { type: 'button', id: 'links-btn', 'aria-expanded': 'false', onclick: (ev) => toggleLinks(ev.currentTarget) }, 'Links') : '';
    if (!canWrite) {
      bar.prepend(filter, folderZip, selLink, links);
      return;
    }
    input.tabIndex = -1; // the Upload files button stands in for it
    input.addEventListener('change', () => pick(input));
    folderInput.addEventListener('change', () => pick(folderInput));
    if (uploadOnly) {
      bar.prepend(
        h('button', { type: 'button', class: 'primary', id: 'upload-btn', onclick: () => input.click() }, 'Upload files'),
        h('button', { type: 'button', id: 'upload-folder-btn', onclick: () => folderInput.click() }, 'Upload folder'),
        folderInput,
      );
      $('#upform').addEventListener('submit', (ev) => ev.preventDefault());
      return;
    }
    bar.prepend(
      filter,
      h('button', { type: 'button', class: 'primary', id: 'upload-btn', onclick: () => input.click() }, 'Upload files'),
      h('button', { type: 'button', id: 'upload-folder-btn', onclick: () => folderInput.click() }, 'Upload folder'),
      h('button', { type: 'button', id: 'mkdir-btn', onclick: newFolder }, 'New folder'),
      folderZip,
      selLink,
      links,
      folderInput,
    );
    // With the script, the file input uploads on choice; the form stays for
    // browsers without it.
    $('#upform').addEventListener('submit', (ev) => ev.preventDefault());
  }

  function setupTable() {
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
      if (e) openMenu(e, btn);
    });
    doc.addEventListener('click', (ev) => {
      if (menu && !menu.contains(ev.target) && !ev.target.closest('button.act')) closeMenu(false);
    });
  }

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
      window.wirespeedReadyAt = performance.now();
      root.dataset.ready = '1';
      return;
    }
    buildTable();
    setupTable();
    setupBar();
    if (canWrite) setupDrop();
    setupUser();
    if (locked && users) {
      // A path that needs a user: sign in, then ask again with the cookie.
      root.dataset.ready = '1';
      if (await signIn()) location.reload();
      return;
    }
    if (locked) {
      // A private server answered the navigation without the listing.
      if (!token && !(await askToken())) return;
      if (isDir) await load();
      else await saveWithToken(here, decodeURIComponent(here.split('/').pop()));
    } else {
      entries = parseRows(rows);
      const unread = !entries.length && rows.querySelector('tbody tr:not(.up)');
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
})();
