#!/usr/bin/env bash
# scripts/slurm/test.sh - end-to-end test of workflow/profiles/slurm on a real single-node Slurm cluster.
#
#   bash scripts/slurm/test.sh          (as root; about 9 minutes on the 2-core CI machine, the workflow run 8 of them)
#
# .ci/run runs each .test config end to end only this way (then `python -m unstereo.workflow.outputs_check` on the results
# it leaves), falling back to a local run where no Slurm cluster can be started.
#
# 1. starts the cluster (scripts/slurm/start.sh: munged, slurmctld, slurmd on localhost, no accounting);
# 2. deletes the test config's results_dir and runs the whole workflow on it with the Slurm executor and profile:
#      snakemake --executor slurm --workflow-profile workflow/profiles/slurm --configfile .test/config.yaml
#                --slurm-status-command squeue ...
#    then checks, for whatever `rule all` produces: every file `snakemake --summary` listed before the run exists
#    afterwards, a dry run has nothing left to do, and every job went through Slurm, ended COMPLETED and was
#    submitted with a memory request and a time limit (tests/workflow/test_slurm_profile.py checks that the rules
#    themselves declare them);
# 3. failure behaviour, on the toy workflow tests/slurm_failure/Snakefile: a failing job is reported with its Slurm
#    log path, --retries resubmits a job with more memory, and rerunning the same command after the fix resumes
#    (runs only what is missing);
# 4. stops the daemons it started (EXIT trap; by PID, never by name) and prints PASS or FAIL.
#
# Environment: SLURM_TEST_CONFIG (default .test/config.yaml; .ci/run also runs .test/config-methods.yaml, with
# SLURM_TEST_FAILURES=0), SLURM_TEST_TIMEOUT (seconds per snakemake run,
# default 1200: the .test pipeline generates with a 0.5B model on CPU), SLURM_TEST_FAILURES=0 skips step 3, SLURM_TEST_KEEP=1 leaves the cluster running, and the
# SLURM_* settings of start.sh. The output of each snakemake run is kept in .test/logs/slurm-test/. Uses .venv/bin (made by `make venv`) when it exists, otherwise snakemake on PATH;
# the snakemake-executor-plugin-slurm package must be installed (`pip install -e '.[slurm]'`).
set -uo pipefail

REPO=$(cd "$(dirname "$0")/../.." && pwd)
cd "$REPO" || exit 1
HERE=$REPO/scripts/slurm
CONFIG=${SLURM_TEST_CONFIG:-.test/config.yaml}
TIMEOUT=${SLURM_TEST_TIMEOUT:-1200}
export SLURM_BASE=${SLURM_BASE:-/tmp/unstereo-slurm}
[ -x "$REPO/.venv/bin/snakemake" ] && export PATH=$REPO/.venv/bin:$PATH # jobs inherit PATH (sbatch --export=ALL)

T0=$(date +%s)
RESULT=FAIL
STARTED=0
# this test's own files (snakemake output of each run, the toy workflow's directory); kept for inspection
WORK=$REPO/.test/logs/slurm-test
rm -rf "$WORK" && mkdir -p "$WORK"

log() { echo "slurm/test: $*" >&2; }
fail() {
  log "FAILED CHECK: $*"
  exit 1
}
finish() {
  local rc=$?
  if [ "$STARTED" = 1 ] && [ "${SLURM_TEST_KEEP:-0}" != 1 ]; then bash "$HERE/stop.sh" || true; fi
  [ "$rc" = 0 ] && [ "$RESULT" = PASS ] || RESULT=FAIL
  [ "$RESULT" = PASS ] || log "snakemake output of each run: $WORK/*.log; Slurm job logs: .snakemake/slurm_logs/"
  echo "slurm/test: $RESULT ($(($(date +%s) - T0)) s)"
  [ "$RESULT" = PASS ] || exit 1
}
trap finish EXIT

command -v snakemake >/dev/null || fail "snakemake not found (run 'make venv' or put a venv's bin on PATH)"
PY=$(dirname "$(command -v snakemake)")/python # the interpreter of snakemake's venv
"$PY" -c 'import snakemake_executor_plugin_slurm' ||
  fail "snakemake-executor-plugin-slurm is not installed (pip install -e '.[slurm]')"

# ---- 1. cluster ---------------------------------------------------------------------------------------------------
bash "$HERE/start.sh" >/dev/null || fail "could not start the Slurm cluster (scripts/slurm/start.sh)"
STARTED=1

# last Slurm job id before a run, and the jobs submitted since (id state) - squeue keeps finished jobs MinJobAge s
last_jobid() { squeue -h -t all -o %i | sort -n | tail -1; }
jobs_since() { squeue -h -t all -o '%i %T' | awk -v after="${1:-0}" '$1 > after' | sort -n; }
# job_field ID KEY: a field of `scontrol show job` (e.g. TimeLimit, MinMemoryNode)
job_field() { scontrol -o show job "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }

# run_snakemake LOGFILE ARGS...: the Slurm profile with squeue status checks and a hard time limit. SIGTERM alone
# does not stop snakemake while jobs are active; -k sends KILL 30 s later.
run_snakemake() {
  local out=$1
  shift
  timeout -k 30 "$TIMEOUT" snakemake --executor slurm --workflow-profile "$REPO/workflow/profiles/slurm" \
    --slurm-status-command squeue --slurm-init-seconds-before-status-checks 2 --slurm-keep-successful-logs \
    "$@" >"$out" 2>&1
}

# ---- 2. the test config on Slurm ----------------------------------------------------------------------------------
[ -f "$CONFIG" ] || fail "no config $CONFIG"
RESULTS=$("$PY" -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["results_dir"])' "$CONFIG") ||
  fail "cannot read results_dir from $CONFIG"
case $(realpath -m "$RESULTS")/ in
  "$REPO"/.test/*) rm -rf -- "$RESULTS" ;;
  *) fail "results_dir '$RESULTS' of $CONFIG is not under .test/; refusing to delete it" ;;
esac

# expected outputs: every output file of the DAG `rule all` asks for (column 1 of the summary)
snakemake --configfile "$CONFIG" --summary --quiet all >"$WORK/summary-before.tsv" 2>"$WORK/summary-before.err" ||
  fail "snakemake --summary failed: $(tail -n 5 "$WORK/summary-before.err")"
awk -F'\t' 'NR > 1 && NF >= 5 {print $1}' "$WORK/summary-before.tsv" | sort >"$WORK/expected.txt"
n_expected=$(wc -l <"$WORK/expected.txt")
[ "$n_expected" -gt 0 ] || fail "rule all produces no files with $CONFIG"
log "$CONFIG: rule all needs $n_expected output files; running on Slurm"

before=$(last_jobid)
t=$(date +%s)
run_snakemake "$WORK/run.log" --configfile "$CONFIG"
rc=$?
log "workflow run: exit $rc in $(($(date +%s) - t)) s"
if [ "$rc" != 0 ]; then
  tail -n 40 "$WORK/run.log" >&2
  [ "$rc" = 124 ] || [ "$rc" = 137 ] && fail "snakemake did not finish within ${TIMEOUT}s"
  fail "snakemake --executor slurm exited $rc"
fi

while read -r f; do
  [ -e "$f" ] || fail "expected output missing after the run: $f"
done <"$WORK/expected.txt"
snakemake --configfile "$CONFIG" --dry-run --quiet all >"$WORK/dry.log" 2>&1 || fail "dry run after the run failed"
grep -q "Nothing to be done" "$WORK/dry.log" || {
  cat "$WORK/dry.log" >&2
  fail "jobs remain to be done after the Slurm run"
}

jobs_since "$before" >"$WORK/jobs.txt"
n_jobs=$(wc -l <"$WORK/jobs.txt")
[ "$n_jobs" -gt 0 ] || fail "no Slurm job was submitted (did the run execute locally?)"
while read -r id state; do
  [ "$state" = COMPLETED ] || fail "Slurm job $id ended $state (logs: .snakemake/slurm_logs/)"
  tl=$(job_field "$id" TimeLimit)
  mem=$(job_field "$id" MinMemoryNode)
  { [ -n "$tl" ] && [ "$tl" != UNLIMITED ]; } || fail "Slurm job $id has no time limit (neither its rule nor the profile sets runtime)"
  [ -n "$mem" ] || fail "Slurm job $id has no --mem request (neither its rule nor the profile sets mem_mb)"
done <"$WORK/jobs.txt"
log "ok: $n_expected outputs present, nothing left to do, $n_jobs Slurm jobs COMPLETED with mem and time limits"

# ---- 3. failure, retry with more memory, resume (toy workflow) ----------------------------------------------------
if [ "${SLURM_TEST_FAILURES:-1}" = 1 ]; then
  TOY=(--snakefile "$REPO/tests/slurm_failure/Snakefile" --directory "$WORK/toy" --retries 1)
  mkdir -p "$WORK/toy"
  before=$(last_jobid)
  t=$(date +%s)
  run_snakemake "$WORK/toy1.log" "${TOY[@]}"
  rc=$?
  log "toy run with a failing job: exit $rc in $(($(date +%s) - t)) s"
  { [ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$rc" != 137 ]; } || {
    tail -n 40 "$WORK/toy1.log" >&2
    fail "the toy run should fail (not time out); exit $rc"
  }
  # the failure names the Slurm job and its log file, and the log holds the rule's error
  grep -q "SLURM-job '[0-9]*' failed" "$WORK/toy1.log" || fail "no 'SLURM-job ... failed' report in the output"
  slurm_log=$(grep -o '[^ ]*\.snakemake/slurm_logs/rule_broken/[^ ]*\.log' "$WORK/toy1.log" | head -1)
  [ -n "$slurm_log" ] || fail "the failure report does not name the Slurm log of rule broken"
  [ -f "$slurm_log" ] || [ -f "$WORK/toy/$slurm_log" ] || fail "reported Slurm log $slurm_log does not exist"
  grep -q "deliberate failure" "$slurm_log" 2>/dev/null || grep -q "deliberate failure" "$WORK/toy/$slurm_log" ||
    fail "the reported Slurm log does not contain the job's error"
  log "ok: failing job reported with its log $slurm_log"
  # flaky: attempt 1 with 1000 MB failed, attempt 2 was resubmitted with 1500 MB and succeeded
  grep -qx "ok 1500" "$WORK/toy/flaky.txt" 2>/dev/null || fail "flaky.txt missing or not from the 1500 MB retry"
  mapfile -t attempts <"$WORK/toy/attempts.txt"
  seen=""
  for line in "${attempts[@]}"; do
    [[ $line =~ ^job=([0-9]+)\ mem_mb=([0-9]+)$ ]] || continue
    id=${BASH_REMATCH[1]}
    req=$(job_field "$id" MinMemoryNode)
    [ "$req" = "${BASH_REMATCH[2]}M" ] || fail "Slurm job $id asked for $req, the rule for ${BASH_REMATCH[2]} MB"
    seen+="$req "
  done
  [ "$seen" = "1000M 1500M " ] || fail "flaky's submissions asked for '$seen', expected '1000M 1500M '"
  log "ok: --retries resubmitted flaky with more memory ($seen)"

  # resume: after the fix the same command runs only what is missing (one job: broken)
  touch "$WORK/toy/fixed"
  before=$(last_jobid)
  t=$(date +%s)
  run_snakemake "$WORK/toy2.log" "${TOY[@]}" || {
    tail -n 40 "$WORK/toy2.log" >&2
    fail "the resumed toy run failed"
  }
  [ -f "$WORK/toy/broken.txt" ] || fail "broken.txt missing after the resumed run"
  resumed=$(jobs_since "$before" | wc -l)
  [ "$resumed" = 1 ] || fail "the resumed run submitted $resumed Slurm jobs, expected 1 (only broken)"
  log "ok: the rerun resumed with the one missing job ($(($(date +%s) - t)) s)"
fi

RESULT=PASS
