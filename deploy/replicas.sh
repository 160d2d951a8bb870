#!/usr/bin/env bash
# Start N replicas of the dashboard on this machine behind nginx (deploy/nginx/elitr-dashboard.conf),
# on ports FIRST_PORT.. (default 8501), and wait; Ctrl-C or SIGTERM stops them all.
#
#   DATABASE_URL=postgresql://... deploy/replicas.sh 2 [FIRST_PORT]
#
# Each replica is one Streamlit server process: one core at most (Python's GIL), so run as many
# as the machine has cores to spare, not more (more processes on the same cores hold no more
# participants); add machines for more, with ELITR_REPLICAS = the count across all machines
# (it sizes each replica's share of PostgreSQL's connections; a share too small refuses the start
# with the fix). Logs and pid files go to ELITR_RUN_DIR (default var/run). systemd instead:
# deploy/systemd/elitr-dashboard@.service.
set -euo pipefail

count=${1:?usage: deploy/replicas.sh N [FIRST_PORT]}
first=${2:-8501}
root=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-$root/.venv/bin/python}
run_dir=${ELITR_RUN_DIR:-$root/var/run}
: "${DATABASE_URL:?set DATABASE_URL to the PostgreSQL database all replicas share}"
case $DATABASE_URL in
  postgres*) ;;
  *) echo "error: replicas share one PostgreSQL database; DATABASE_URL is not PostgreSQL" >&2
     exit 2 ;;
esac
cores=$(nproc)
if [ "$count" -gt "$cores" ]; then
  echo "warning: $count replicas on $cores cores hold no more participants than $cores" >&2
fi
export ELITR_REPLICAS=${ELITR_REPLICAS:-$count}
export ELITR_TRUSTED_PROXIES=${ELITR_TRUSTED_PROXIES:-127.0.0.1}
mkdir -p "$run_dir"
cd "$root"
# schema and bundled data once, before the replicas (each would otherwise race to upgrade it)
"$python" -m elitr_core init >/dev/null

pids=()
stop() { kill "${pids[@]}" 2>/dev/null || true; wait || true; }
trap stop INT TERM EXIT
for ((i = 0; i < count; i++)); do
  port=$((first + i))
  "$python" -m streamlit run server.py --server.port "$port" --server.address 127.0.0.1 \
    --server.headless true >"$run_dir/replica-$port.log" 2>&1 &
  pids+=($!)
  echo $! >"$run_dir/replica-$port.pid"
  echo "    server 127.0.0.1:$port max_fails=1 fail_timeout=10s;  # replica $((i + 1)), pid $!"
done
echo "replicas started (the lines above are nginx's upstream block); logs in $run_dir"
wait -n "${pids[@]}" || true
# one replica ended (killed or refused at start): say which, keep the others serving
for pid in "${pids[@]}"; do
  kill -0 "$pid" 2>/dev/null || echo "replica pid $pid ended; see $run_dir" >&2
done
wait
