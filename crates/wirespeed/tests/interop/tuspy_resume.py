"""Uploads a file with tuspy (the tus project's Python client) the way a
script that may be killed does: the upload's URL kept in a file storage
keyed by the file's fingerprint, so a rerun resumes from the server's
offset. With --wait it loads first and begins when a line arrives on its
stdin (a rerun that starts the moment the killed run dies). Prints
`start OFFSET` once it knows where it begins, `done` at the end.
Usage: tuspy_resume.py ENDPOINT FILE TOKEN STORAGE [--wait]"""
import sys

from tusclient import client
from tusclient.storage import filestorage

endpoint, path, token, storage = sys.argv[1:5]
if "--wait" in sys.argv[5:]:
    sys.stdin.readline()
tus = client.TusClient(endpoint, headers={"Authorization": f"Bearer {token}"})
# tuspy's default chunk size: the whole file in one PATCH.
uploader = tus.uploader(
    file_path=path,
    metadata={"filename": "resumed.bin"},
    store_url=True,
    url_storage=filestorage.FileStorage(storage),
    retries=0,
)
print(f"start {uploader.offset}", flush=True)
uploader.upload()
print("done", flush=True)
