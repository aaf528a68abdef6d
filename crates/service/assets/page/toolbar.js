// The toolbar above the listing: the filter, Upload files / Upload folder
// (the server's file input stands behind them), New folder, the folder's
// zip, the selection's zip, Links and Recently deleted, as the rights allow.
import { newFolder } from './actions.js';
import { canShare, canWrite, here, uploadOnly } from './context.js';
import { $, h } from './dom.js';
import { archiveLink } from './downloads.js';
import { toggleLinks } from './links.js';
import { gridButton } from './grid.js';
import { render, setFilter } from './listing.js';
import { selectionLink } from './selection.js';
import { trashButton } from './trash.js';
import { addFiles } from './upload.js';

export function setupBar() {
  const bar = $('#bar');
  const input = $('#files');
  if (!bar || (canWrite && !input)) return;
  const filter = h('input', { type: 'search', id: 'filter', placeholder: 'Filter', 'aria-label': 'Filter by name' });
  filter.addEventListener('input', () => setFilter(filter.value));
  const folderInput = h('input', { type: 'file', id: 'folder-files', webkitdirectory: true, hidden: true });
  const pick = (inp) => {
    addFiles(Array.from(inp.files).map((file) => ({ file, path: file.webkitRelativePath || file.name })));
    inp.value = '';
  };
  const folder = decodeURIComponent(here.split('/').filter(Boolean).pop() || '');
  const folderZip = uploadOnly ? null : archiveLink(here, folder, 'zip', 'Download folder (zip)');
  const selLink = uploadOnly ? null : selectionLink(folder);
  const links = canShare ? h('button', { type: 'button', id: 'links-btn', 'aria-expanded': 'false', onclick: (ev) => toggleLinks(ev.currentTarget) }, 'Links') : '';
  const view = uploadOnly ? null : gridButton(render);
  const trash = uploadOnly ? '' : trashButton();
  if (!canWrite) {
    bar.prepend(filter, view, folderZip, selLink, links, trash);
    return;
  }
  input.tabIndex = -1; // the Upload files button stands in for it
  input.addEventListener('change', () => pick(input));
  folderInput.addEventListener('change', () => pick(folderInput));
  const upload = [
    h('button', { type: 'button', class: 'primary', id: 'upload-btn', onclick: () => input.click() }, 'Upload files'),
    h('button', { type: 'button', id: 'upload-folder-btn', onclick: () => folderInput.click() }, 'Upload folder'),
  ];
  if (uploadOnly) bar.prepend(...upload, folderInput);
  else bar.prepend(filter, view, ...upload, h('button', { type: 'button', id: 'mkdir-btn', onclick: newFolder }, 'New folder'), folderZip, selLink, links, trash, folderInput);
  // With the script, the file input uploads on choice; the form stays for
  // browsers without it.
  $('#upform').addEventListener('submit', (ev) => ev.preventDefault());
}
