// Where the page is and what it may do: read once from the URL and from the
// attributes the server wrote on <body> (listing.rs, from page/mod.rs
// `page_rights`). The page offers only the actions the server would take.
const body = document.body;

/** The server's path prefix (`serve --path-prefix`, written by listing.rs
 * as data-base), '' at the root: the URLs of the page carry it already. */
export const base = body.dataset.base || '';
/** The server's control routes, below its prefix. */
export const SESSION = base + '/-/session';
export const SHARES = base + '/-/shares';
export const UPLOADS = base + '/-/uploads';

export const here = location.pathname;
/** `here` below the prefix: the folder's path on the server, which a
 * control route takes after its own (SHARES + path). */
export const path = here.slice(base.length);
export const isDir = here.endsWith('/');
/** A private server answered the navigation with the frame, no listing. */
export const locked = body.dataset.locked === '1';
// A server with users: the page signs in with its own form (a session
// cookie), never the browser's Basic dialog; data-user names who is in.
export const users = body.dataset.users === '1';
export const user = body.dataset.user || '';
const can = new Set((body.dataset.can || '').split(' '));
export const canRead = can.has('read');
export const canWrite = can.has('write');
export const canDelete = can.has('delete');
// An upload link or a drop box: the page offers the upload and nothing
// that reads (no names, no archives, no reload of the listing).
export const uploadOnly = canWrite && !canRead;
// Opened through a link to a folder: how deep the link's own folder is
// (no way up from there; the server links no breadcrumb above it).
export const top = Number(body.dataset.top || 0);
export const depth = path.split('/').filter(Boolean).length - (isDir ? 0 : 1);
/** "Share link…" on the rows (share links on, the asker may mint them). */
export const canShare = body.dataset.share === '1';

// Opened through a share link: every URL of the page carries it on.
const shareToken = new URLSearchParams(location.search).get('share');
// (The server's own hrefs carry it already: added once.)
export const withShare = (url) =>
  shareToken && !/[?&]share=/.test(url)
    ? url + (url.includes('?') ? '&' : '?') + 'share=' + encodeURIComponent(shareToken)
    : url;
