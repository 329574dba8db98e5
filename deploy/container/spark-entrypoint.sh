#!/bin/bash
# Entrypoint of the chunkraft-spark image. Spark on Kubernetes starts its pods with the
# container command `driver ...` (cluster deploy mode) or `executor` (its settings in SPARK_*
# environment variables); anything else runs `chunkraft ARGS...`.
set -eo pipefail
spark_home="${SPARK_HOME:?SPARK_HOME is not set}"
classpath="${SPARK_HOME}/conf:${spark_home}/jars/*:${PWD}"
case "${1:-}" in
  driver)
    shift
    exec /usr/bin/tini -s -- "${spark_home}/bin/spark-submit" \
      --conf "spark.driver.bindAddress=${SPARK_DRIVER_BIND_ADDRESS}" \
      --conf "spark.executorEnv.SPARK_DRIVER_POD_IP=${SPARK_DRIVER_BIND_ADDRESS}" \
      --deploy-mode client "$@"
    ;;
  executor)
    shift
    java_opts=()
    for name in "${!SPARK_JAVA_OPT_@}"; do
      java_opts+=("${!name}")
    done
    exec /usr/bin/tini -s -- "${JAVA_HOME}/bin/java" "${java_opts[@]}" \
      -Xms"${SPARK_EXECUTOR_MEMORY}" -Xmx"${SPARK_EXECUTOR_MEMORY}" -cp "${classpath}" \
      org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
      --driver-url "${SPARK_DRIVER_URL}" --executor-id "${SPARK_EXECUTOR_ID}" \
      --cores "${SPARK_EXECUTOR_CORES}" --app-id "${SPARK_APPLICATION_ID}" \
      --hostname "${SPARK_EXECUTOR_POD_IP}" \
      --resourceProfileId "${SPARK_RESOURCE_PROFILE_ID}" --podName "${SPARK_EXECUTOR_POD_NAME}"
    ;;
  spark-submit)
    shift
    exec "${spark_home}/bin/spark-submit" "$@"
    ;;
  *)
    exec /opt/chunkraft/bin/chunkraft "$@"
    ;;
esac
