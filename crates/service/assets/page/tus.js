// Large files go through tus 1.0 (crates/resumable, `/-/uploads/`) with
// tus-js-client, so a dropped network or a reload resumes at the server's
// offset instead of starting over. The library is fetched on the first
// large upload: the page's first load does not carry it.
//
// Configured for this server: a file of PARALLEL_FROM or more goes as
// PARTS partial uploads in parallel, joined by a final one (tus
// concatenation: over a long or lossy link one TCP connection carries a
// fraction of the line, and the browser's operating system, not the page,
// picks the congestion control); a server whose storage cannot join them
// answers 501 and the file goes as one upload. 8 MiB per PATCH, the
// file's date as `X-OC-Mtime` on every request (the completing one sets
// it), the page's marker and token on each, a share token on every URL.
// tus-js-client remembers each upload's URL in localStorage under a
// fingerprint of the file and its endpoint, which is what resumes it after
// a reload. Its own retries are off: failures are handled as for a plain
// PUT (wait for the network, ask for the token, Retry).
import { askToken, currentToken } from './api.js';
import { path, UPLOADS, withShare } from './context.js';
import { encPath } from './dom.js';
import { Cancelled, mtimeOf, statusError, waitForNetwork } from './transfer.js';

const CHUNK = 8 * 1024 * 1024; // bytes per PATCH
// A browser opens at most six connections per host over HTTP/1.1: six
// parts fill them for one large file; with several uploads at once (the
// queue runs three) the browser queues the rest. Below 64 MiB a part
// would be under ~11 MiB, and the final's extra round trips and the
// extra creations cost more than parallel streams gain.
const PARTS = 6;
const PARALLEL_FROM = 64 * 1024 * 1024;

let library = null;
/** tus-js-client (its browser build sets `window.tus`). */
function tusClient() {
  if (!library) {
    library = import('../vendor/tus.min.js').then(
      () => globalThis.tus,
      (err) => {
        library = null; // a later upload tries again
        throw err;
      },
    );
  }
  return library;
}

/** With an unfinished upload remembered here (a reload cut it), fetch the
 * library now: choosing the file again then resumes at once. */
export function prepareResume() {
  let pending = false;
  try {
    for (let i = 0; i < localStorage.length && !pending; i++) pending = localStorage.key(i).startsWith('tus::');
  } catch (_) {
    return; // no storage: nothing to resume
  }
  if (pending) tusClient().catch(() => {});
}

/** Send `it.file` through tus; `onProgress(bytes)` as it goes. Resolves
 * true when stored, false when this server has no resumable routes (then
 * send it plainly); rejects on a failure. */
export async function tusUpload(it, onProgress, parts = it.file.size >= PARALLEL_FROM ? PARTS : 1) {
  const tus = await tusClient();
  return new Promise((resolve, reject) => {
    if (it.state === 'cancelled') return reject(new Cancelled('cancelled'));
    const stack = new tus.DefaultHttpStack();
    let failures = 0;
    const upload = new tus.Upload(it.file, {
      endpoint: new URL(UPLOADS + path + encPath(it.path), location.href).href,
      chunkSize: CHUNK,
      parallelUploads: parts,
      retryDelays: null,
      metadata: { filename: it.path.split('/').pop() },
      headers: Object.assign({ 'X-Wirespeed-Page': '1' }, mtimeOf(it)),
      removeFingerprintOnSuccess: true,
      // The upload's own URL comes from the server's Location: a share
      // link's token has to be put on it, as on the creation.
      httpStack: {
        createRequest: (method, url) => stack.createRequest(method, withShare(url)),
        getName: () => 'wirespeed',
      },
      onBeforeRequest: (req) => {
        const token = currentToken();
        if (token) req.setHeader('Authorization', 'Bearer ' + token);
      },
      onProgress: (sent) => onProgress(sent),
      onChunkComplete: () => (failures = 0),
      onSuccess: () => resolve(true),
      onError: (err) => failed(err).catch(reject),
    });
    const again = () => {
      it.startLoaded = null;
      upload.start(); // with its URL known: HEAD for the offset, then on
    };
    async function failed(err) {
      if (it.state === 'cancelled') throw new Cancelled('cancelled');
      const req = err.originalRequest;
      const res = err.originalResponse;
      if (!req) throw err; // not a request's failure (reading the file)
      if (!res) {
        await waitForNetwork(it, ++failures);
        return again();
      }
      const status = res.getStatus();
      if (status === 401 && (await askToken())) return again();
      // No concatenation on this server: one upload per file instead.
      if (req.getMethod() === 'POST' && status === 501 && parts > 1) {
        upload.abort(true).catch(() => {});
        return resolve(tusUpload(it, onProgress, 1));
      }
      // No resumable routes on this server: one plain PUT instead.
      if (req.getMethod() === 'POST' && [404, 405, 501].includes(status)) return resolve(false);
      // Another tab or attempt moved the offset on: ask it, go on.
      if ((status === 409 || status === 423) && ++failures <= 40) return again();
      if (status === 404 || status === 410) throw new Error('the server forgot this upload; press Retry to start over');
      throw statusError(status, res.getBody(), 'refused');
    }
    it.stopTransfer = () => {
      // Free the partial upload on the server; this upload is not resumed.
      upload.abort(true).catch(() => {});
      reject(new Cancelled('cancelled'));
    };
    upload.findPreviousUploads().then((previous) => {
      if (it.state === 'cancelled') return;
      previous.sort((a, b) => Date.parse(b.creationTime) - Date.parse(a.creationTime));
      if (previous.length) upload.resumeFromPreviousUpload(previous[0]);
      upload.start();
    }, reject);
  });
}
