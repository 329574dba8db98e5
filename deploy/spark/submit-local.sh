#!/usr/bin/env bash
# Runs the audit with spark-submit on this machine: submit-local.sh --snapshot DIR [flags...]
# MASTER (default local[2]) and PYTHON (default the repo's .venv) may be overridden.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
python="${PYTHON:-$root/.venv/bin/python}"
export SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}"
export PYSPARK_PYTHON="$python" PYSPARK_DRIVER_PYTHON="$python"
export PYTHONPATH="$root/src${PYTHONPATH:+:$PYTHONPATH}"
exec "$(dirname "$python")/spark-submit" --master "${MASTER:-local[2]}" \
  --conf spark.ui.enabled=false --conf spark.ui.showConsoleProgress=false \
  "$here/audit_job.py" "$@"
