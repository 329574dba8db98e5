#!/usr/bin/env bash
# Runs the audit on a Spark standalone cluster (client deploy mode: Python jobs cannot use
# cluster mode on standalone). Inputs must be on storage every executor reads (s3a://, HDFS,
# or a shared mount).
#   MASTER=spark://HOST:7077 submit-standalone.sh --snapshot DIR --report OUT [flags...]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
python="${PYTHON:-$root/.venv/bin/python}"
: "${MASTER:?set MASTER=spark://HOST:7077}"
# With the pip package, spark-class needs SPARK_HOME at pyspark's directory.
export SPARK_HOME="${SPARK_HOME:-$("$python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')}"
export PYSPARK_PYTHON="${PYSPARK_PYTHON:-python3}" PYSPARK_DRIVER_PYTHON="$python"
zip="$("$here/package.sh")"
exec "$SPARK_HOME/bin/spark-submit" --master "$MASTER" --deploy-mode client \
  --py-files "$zip" --conf spark.ui.showConsoleProgress=false \
  "$here/audit_job.py" "$@"
