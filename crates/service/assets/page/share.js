// "Share link…": an expiry (and, for a folder one may write to,
// upload-only), minted by `POST /-/shares/PATH`, shown with Copy.
import { api } from './api.js';
import { base, canWrite, SHARES } from './context.js';
import { failure, modal, toast } from './dialogs.js';
import { doc, dtf, h } from './dom.js';
import { refreshLinks } from './links.js';
import { pathOf } from './listing.js';

export async function shareLink(e) {
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
  const r = await api(SHARES + pathOf(e).slice(base.length) + q, { method: 'POST' });
  if (r.status !== 201) return toast(await failure(r, 'Could not make a link'));
  const j = await r.json();
  const url = new URL(j.path + '?share=' + j.share, location.href).href;
  refreshLinks();
  await showMade(url, j, choice.upload);
}

/** The link just made, selected, with Copy and Done. */
function showMade(url, j, upload) {
  return new Promise((resolve) => {
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
        h('p', {}, h('strong', {}, upload ? 'Upload link' : 'Share link'), ` until ${dtf.format(until)}`),
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
