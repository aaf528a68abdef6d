// Uploads a file with tus-js-client (the tus project's own client) to a
// wirespeed tus endpoint; a connection cut is retried by the client from
// the server's offset. Usage: node tus_js_upload.cjs ENDPOINT FILE [PARALLEL]
// (WIRESPEED_NODE_MODULES names the node_modules holding tus-js-client;
// PARALLEL > 1 sends that many partial uploads and a final one, tus
// concatenation).
const path = require("path");
const fs = require("fs");
const { Upload } = require(path.join(process.env.WIRESPEED_NODE_MODULES, "tus-js-client"));

const [endpoint, file, parallel] = process.argv.slice(2);
const data = fs.readFileSync(file);
let retries = 0;
const upload = new Upload(data, {
  endpoint,
  metadata: { filename: path.basename(file) },
  parallelUploads: Number(parallel || 1),
  retryDelays: [0, 200, 500, 1000, 2000, 2000, 2000],
  removeFingerprintOnSuccess: true,
  onShouldRetry(err) {
    retries += 1;
    console.log(`retry after error: ${err.message.split("\n")[0]}`);
    return true;
  },
  onError(err) {
    console.error(`failed: ${err}`);
    process.exit(1);
  },
  onSuccess() {
    console.log(`done: ${data.length} bytes, ${retries} retries, ${upload.url}`);
  },
});
upload.start();
