"""Uploads a file with tuspy (the tus project's Python client) to a wirespeed
tus endpoint in 2 MiB PATCHes; after a connection cut it asks the server for
the offset and goes on. Usage: tuspy_upload.py ENDPOINT FILE TOKEN"""
import os
import sys
import time

from tusclient import client

endpoint, path, token = sys.argv[1:4]
tus = client.TusClient(endpoint, headers={"Authorization": f"Bearer {token}"})
uploader = tus.uploader(
    file_path=path,
    chunk_size=2 * 1024 * 1024,
    metadata={"filename": os.path.basename(path)},
    retries=0,
)
size = uploader.get_file_size()
patches = 0
failures = 0
while uploader.offset < size:
    try:
        uploader.upload_chunk()
        patches += 1
    except Exception as err:  # a cut connection surfaces as any of several errors
        failures += 1
        if failures > 10:
            raise
        print(f"retry after error: {type(err).__name__}", flush=True)
        time.sleep(0.3)
        uploader.offset = uploader.get_offset()
print(f"patches: {patches}")
print(f"retries: {failures}")
print(f"url: {uploader.url}")
