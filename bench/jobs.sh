# Sourced by the bench scripts: jobs_run runs the commands read from standard input, one per
# line, 8 at a time, appending their output to $LOG.
jobs_run() {
  local n=0
  while read -r cmd; do
    bash -c "$cmd" >> "$LOG" 2>&1 &
    n=$((n + 1))
    if [ $((n % 8)) -eq 0 ]; then wait -n; n=$((n - 1)); fi
  done
  wait
}
