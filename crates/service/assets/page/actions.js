// Changing the folder through WebDAV: New folder (MKCOL), Rename… (MOVE,
// never overwriting) and Delete… (DELETE, a folder only when empty); the
// listing is read again after each.
import { api } from './api.js';
import { here } from './context.js';
import { ask, failure, toast } from './dialogs.js';
import { enc } from './dom.js';
import { link, load } from './listing.js';

export async function rename(e) {
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

export async function remove(e) {
  const ok = await ask({ title: `Delete "${e.name}"${e.dir ? ' (an empty folder)' : ''}?`, ok: 'Delete', danger: true });
  if (!ok) return;
  // Depth 0: a folder goes only if empty (a plain WebDAV DELETE takes it whole).
  const r = await api(link(e), { method: 'DELETE', headers: { Depth: '0' } });
  if (r.ok) toast(`Deleted ${e.name}`);
  else if (r.status === 409) toast('Only an empty folder can be deleted');
  else toast(await failure(r, 'Delete failed'));
  load();
}

export async function newFolder() {
  const v = await ask({ title: 'New folder', input: { label: 'Folder name' }, ok: 'Create' });
  if (!v) return;
  if (v.includes('/')) return toast('A name cannot contain "/"');
  const r = await api(here + enc(v) + '/', { method: 'MKCOL' });
  if (r.status === 201) toast(`Created ${v}`);
  else if (r.status === 405) toast(`"${v}" already exists`);
  else toast(await failure(r, 'Could not create the folder'));
  load();
}
