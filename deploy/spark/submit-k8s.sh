#!/usr/bin/env bash
# Runs the audit on Kubernetes (cluster deploy mode). IMAGE is a Spark image with JDK 17+;
# the Python environment ships as a venv-pack archive (ENV_ARCHIVE, on storage the pods
# read, e.g. s3a://bucket/chunkraft-env.tar.gz; build it with
#   pip install venv-pack && venv-pack -p .venv -o chunkraft-env.tar.gz).
#   APISERVER=https://HOST:6443 IMAGE=... ENV_ARCHIVE=s3a://... JOB=s3a://.../audit_job.py \
#     submit-k8s.sh --snapshot s3a://bucket/snap --report /tmp/report [flags...]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
: "${APISERVER:?set APISERVER=https://HOST:6443}" "${IMAGE:?set IMAGE}" \
  "${ENV_ARCHIVE:?set ENV_ARCHIVE}"
spark_submit="${SPARK_SUBMIT:-spark-submit}"
exec "$spark_submit" --master "k8s://$APISERVER" --deploy-mode cluster \
  --name chunkraft-audit \
  --conf spark.kubernetes.container.image="$IMAGE" \
  --conf spark.kubernetes.namespace="${NAMESPACE:-default}" \
  --conf spark.executor.instances="${EXECUTORS:-2}" \
  --archives "$ENV_ARCHIVE#environment" \
  --conf spark.pyspark.python=./environment/bin/python \
  "${JOB:-$here/audit_job.py}" "$@"
