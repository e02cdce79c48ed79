#!/usr/bin/env bash
# Install the real engines the engine tests start (tests/support/servers.py, tests/support/engines.py):
# PostgreSQL and MariaDB server binaries from Debian, a JRE for Spark if `java` is missing, Chromium
# for the report's browser test,
# and the Python clients/engines from PyPI. Debian 12, run as root. Idempotent: when everything
# is already there it only checks and returns (no apt-get update, no pip download).
#
# The tests start their own throw-away servers on free ports on 127.0.0.1, so the packages'
# own services are neither needed nor wanted: no "main" PostgreSQL cluster is created and no
# service is started during the install (policy-rc.d), and nothing is enabled afterwards.
set -euo pipefail

export DEBIAN_FRONTEND=noninteractive

have_pg() {
    local bindir=""
    if command -v pg_config >/dev/null 2>&1; then bindir="$(pg_config --bindir)"; fi
    [ -n "$bindir" ] && [ -x "$bindir/initdb" ] && [ -x "$bindir/pg_ctl" ] && return 0
    compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null
}
have_mariadb() {
    { command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ]; } &&
        command -v mariadb-install-db >/dev/null 2>&1
}

packages=()
have_pg || packages+=(postgresql)
have_mariadb || packages+=(mariadb-server)
# Spark (pyspark 4) needs Java 17 or newer.
java_ok() {
    command -v java >/dev/null 2>&1 || return 1
    local v
    v="$(java -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n1)"
    [ -n "$v" ] && [ "$v" -ge 17 ]
}
java_ok || packages+=(openjdk-17-jre-headless)
# The HTML report's test opens the report in a real headless browser (tests/test_report.py).
have_chromium() { command -v chromium >/dev/null 2>&1; }
have_chromium || packages+=(chromium fonts-liberation fonts-dejavu-core)  # fonts for the page's text and figures

if [ "${#packages[@]}" -gt 0 ]; then
    echo "engines.sh: installing ${packages[*]}"
    # Don't let the packages create a default cluster or start their services.
    mkdir -p /etc/postgresql-common/createcluster.d
    printf 'create_main_cluster = false\n' > /etc/postgresql-common/createcluster.d/recsql-no-main.conf
    made_policy=""
    if [ ! -e /usr/sbin/policy-rc.d ]; then
        printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
        chmod 755 /usr/sbin/policy-rc.d
        made_policy=1
        trap 'rm -f /usr/sbin/policy-rc.d' EXIT
    fi
    mkdir -p /usr/share/man/man1  # openjdk postinst fails on slim images without it
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${packages[@]}"
    if [ -n "$made_policy" ]; then rm -f /usr/sbin/policy-rc.d; trap - EXIT; fi
    # If a service was started anyway (no policy-rc.d honoured), stop it: the tests don't use it.
    if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
        systemctl stop postgresql mariadb >/dev/null 2>&1 || true
    fi
else
    echo "engines.sh: PostgreSQL, MariaDB, Java and Chromium already installed"
fi

# The server binaries the tests need must now be there.
have_pg || { echo "engines.sh: PostgreSQL initdb/pg_ctl still missing" >&2; exit 1; }
have_mariadb || { echo "engines.sh: mariadbd/mariadb-install-db still missing" >&2; exit 1; }
java_ok || { echo "engines.sh: java 17+ still missing" >&2; exit 1; }
have_chromium || { echo "engines.sh: chromium still missing" >&2; exit 1; }

# Python side: skip pip entirely when every module already imports.
if python3 -c "import psycopg, pymysql, pyspark, chdb, datafusion" >/dev/null 2>&1; then
    echo "engines.sh: Python engine packages already installed"
else
    python3 -m pip install -q "psycopg[binary]" pymysql pyspark chdb datafusion
fi

# Microsoft Recommenders' evaluation module, for the msr convention's differential test: installed
# without its dependencies (the package pins pandas < 3 and pulls in Jupyter, transformers, LightGBM
# and more), none of which recommenders.evaluation.python_evaluation imports; what it does import
# (numpy, pandas, scikit-learn) comes with the test extra.
if python3 -c "import recommenders" >/dev/null 2>&1; then
    echo "engines.sh: recommenders already installed"
else
    python3 -m pip install -q --no-deps "recommenders==1.2.1"
fi

# The run-agreement tools of tests/test_agreement.py, without their dependencies: rbo declares numpy < 2,
# RecTools numpy < 2 and pandas < 3 (and pulls in implicit); the modules the tests import need only
# numpy, pandas, attrs, pydantic, tqdm and typeguard, which come with the test extra.
python3 -m pip install -q --no-deps "rbo==0.1.3" "rectools==0.19.0"

python3 - <<'EOF'
import importlib.metadata as md
print("engines.sh:", ", ".join(f"{p} {md.version(p)}" for p in
      ["psycopg", "psycopg-binary", "PyMySQL", "pyspark", "chdb", "datafusion"]))
EOF

# own_venv NAME FOLDER REQUIREMENTS IMPORTS [PIP OPTIONS...]: a virtual environment of its own at FOLDER,
# installed from REQUIREMENTS with --no-deps, unless its stamp (the file's hash) is current and IMPORTS
# import there.
own_venv() {
    local name="$1" venv="$2" requirements="$3" imports="$4"
    shift 4
    local stamp
    stamp="$(sha256sum "$requirements" | cut -d' ' -f1)"
    if [ "$(cat "$venv/.recsql-requirements" 2>/dev/null)" = "$stamp" ] &&
        "$venv/bin/python" -c "import $imports" >/dev/null 2>&1; then
        echo "engines.sh: $name already installed in $venv"
    else
        rm -rf "$venv"
        python3 -m venv "$venv"
        "$venv/bin/pip" install -q --no-deps "$@" -r "$requirements"
        echo "$stamp" > "$venv/.recsql-requirements"
    fi
}

# dbt and its adapters, for tests/test_dbt.py: in their own virtual environment (dbt pins its own
# dependencies), at RECSQL_DBT_VENV (default ~/.cache/recsql-dbt), from .ci/dbt-requirements.txt:
# the exact set the tests pass with, installed with --no-deps (the adapters' declared pins conflict
# with each other; that set runs). It holds dbt-core 1.11 (1.12 cannot be installed offline), the
# executed adapters (duckdb, postgres, sqlite, spark in session mode with pyspark) and the
# compile-only ones (snowflake, bigquery, redshift, trino, sqlserver), and what a dbt-duckdb Python
# model needs to import recsql from the checkout. A stamp of the file's hash says it is current.
ci_dir="$(cd "$(dirname "$0")" && pwd)"
dbt_venv="${RECSQL_DBT_VENV:-$HOME/.cache/recsql-dbt}"
own_venv dbt "$dbt_venv" "$ci_dir/dbt-requirements.txt" \
    "dbt.adapters.duckdb, dbt.adapters.postgres, dbt.adapters.sqlite, dbt.adapters.spark"
"$dbt_venv/bin/dbt" --version | sed 's/^/engines.sh: dbt: /'

# obp (Open Bandit Pipeline), for tests/test_logs_obp.py: in its own virtual environment, at RECSQL_OBP_VENV
# (default ~/.cache/recsql-obp), from .ci/obp-requirements.txt with --no-deps --ignore-requires-python: obp
# 0.5.7 declares Python < 3.11 and pins numpy 1.23, pandas 1.5 and torch 1.12, and runs on 3.11 with the
# set there (torch: the CPU build on this machine's disk, imported by obp at import time only). A stamp of
# the file's hash says it is current.
obp_venv="${RECSQL_OBP_VENV:-$HOME/.cache/recsql-obp}"
own_venv obp "$obp_venv" "$ci_dir/obp-requirements.txt" "obp.ope, pyarrow" --ignore-requires-python
"$obp_venv/bin/python" -c "import obp; print('engines.sh: obp', obp.__version__)"
