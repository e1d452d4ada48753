#!/usr/bin/env bash
# Quick start: install dependencies, build, start a local cluster (three
# controllers in a quorum and three brokers) with data
# under ./data, and print how to produce and consume.
set -euo pipefail
cd "$(dirname "$0")/.."
deploy/install-deps.sh
deploy/build.sh
deploy/local-cluster.sh start
cat <<MSG

Weir is running. Try:
  export PATH=\$PWD/build/client/cli:\$PATH
  weir topic create demo --partitions 3
  printf 'k1:hello\nk2:world\n' | weir produce demo --key-separator : --report
  weir consume demo --from-beginning --timeout-ms 1000 --format '%p %o %k %v\n'
  weir consume demo --group readers --from-beginning --timeout-ms 3000
  weir group describe readers
  weir bench produce --topic bench --partitions 3 --records 200000 --record-size 100
  weir cluster
Stop it with: deploy/local-cluster.sh stop
MSG
