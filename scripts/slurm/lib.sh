# shellcheck shell=bash
# Shared by start.sh and stop.sh (sourced, not run).

# alive PIDFILE COMM: PIDFILE names a live, non-zombie process whose /proc comm is COMM (a recycled PID is not ours)
alive() {
  local pf=$1 comm=$2 pid
  [ -s "$pf" ] || return 1
  pid=$(cat "$pf" 2>/dev/null) || return 1
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$comm" ] || return 1
  case $(sed -E 's/.*\) ([A-Za-z]).*/\1/' "/proc/$pid/stat" 2>/dev/null) in Z | X | "") return 1 ;; esac
}
