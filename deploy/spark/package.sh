#!/usr/bin/env bash
# Zips the chunkraft package for spark-submit --py-files: deploy/spark/build/chunkraft.zip
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
mkdir -p "$here/build"
rm -f "$here/build/chunkraft.zip"
(cd "$root/src" && zip -qr "$here/build/chunkraft.zip" chunkraft -x '*__pycache__*')
echo "$here/build/chunkraft.zip"
