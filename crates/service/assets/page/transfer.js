// What the two ways of sending a file (a plain PUT, tus) share: how a
// failure is told apart (cancelled, the network, a refusal a retry cannot
// change), the wait for the network, and the file's own date.
export class Cancelled extends Error {}
export class NetError extends Error {}

/** Statuses that the same request gets again: no Retry for them. */
const PERMANENT = new Set([400, 403, 405, 409, 413, 414, 415, 501]);

/** The error for a refusal with `status` and answer `text`. */
export function statusError(status, text, what) {
  const err = new Error(`${what}: ${status}${text ? ' — ' + text.trim().slice(0, 200) : ''}`);
  err.permanent = PERMANENT.has(status);
  return err;
}

/** Wait after a network failure: for `online` when the browser is
 * offline, then a back-off that grows with the failures in a row. Cancel
 * calls `it.wake`. */
export async function waitForNetwork(it, failures) {
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

/** The file's own date, kept by the server (`X-OC-Mtime`, Unix seconds). */
export const mtimeOf = (it) => (it.file.lastModified > 0 ? { 'X-OC-Mtime': String(Math.floor(it.file.lastModified / 1000)) } : {});
