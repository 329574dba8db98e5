"""spark-submit entry point of the chunkraft audit: ``spark-submit [--master URL]
[--py-files chunkraft.zip] deploy/spark/audit_job.py --snapshot DIR [...]``.

The master comes from spark-submit; the flags are ``chunkraft audit``'s. Exit 0 clean,
1 violations, 2 job error.
"""

import sys

from chunkraft.audit.job import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
