// Downloads the server builds or a private server guards: a folder as one
// archive, and a file fetched with the token and saved from memory.
import { api } from './api.js';
import { locked, withShare } from './context.js';
import { failure, toast } from './dialogs.js';
import { doc, h } from './dom.js';

/** A folder as one archive the server builds (`?archive=zip|tar`). */
export function archiveLink(url, name, format, label, role) {
  const href = withShare(url + '?archive=' + format);
  const file = (name || 'files') + '.' + format;
  const a = h('a', { href, download: file, class: 'btn', role: role || false }, label);
  if (locked) a.addEventListener('click', (ev) => (ev.preventDefault(), saveWithToken(href, file)));
  return a;
}

/** A private server's file: fetched with the token, saved from memory. */
export async function saveWithToken(url, name) {
  const r = await api(url);
  if (!r.ok) return toast(await failure(r, 'Download failed'));
  const blob = URL.createObjectURL(await r.blob());
  const a = h('a', { href: blob, download: name });
  doc.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(blob), 60000);
}
