#!/usr/bin/env bash
# Debian's postgresql for tests/test_web_store.py, which starts a PostgreSQL server of its own
# (initdb and pg_ctl in a temporary folder) to test the web app's store on it. Installed with
# apt-get where we are root; elsewhere those tests are skipped and the store is tested on SQLite.
set -euo pipefail
if compgen -G "/usr/lib/postgresql/*/bin/initdb" > /dev/null; then
    exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q postgresql > /dev/null || {
        apt-get update -q > /dev/null && apt-get install -y -q postgresql > /dev/null
    }
    echo "postgresql set-up done: $(ls /usr/lib/postgresql)"
else
    echo "postgresql is not installed (and apt-get as root is not available): the PostgreSQL store tests will be skipped"
fi
