#!/usr/bin/env bash
# Run pytest once per emulated CPU kind: the float32 kernels that torch, oneDNN and MKL pick depend on the CPU's
# vector width (SSE 4 lanes, AVX2 8, AVX-512 16), on FMA and on the thread count, and each choice rounds a reduction
# in another order. The switches below make this machine take the code paths another CPU would, so a golden
# tolerance too tight for some CPU kind fails here too (a Xeon got -25.870601 against the golden -25.870587).
#
#   scripts/test-cpu-kinds.sh tests/scoring/test_scoring_masked.py tests/scoring/test_scoring.py   # pytest arguments
#   scripts/test-cpu-kinds.sh                  # the test files with float tolerances on model outputs (below)
#
# Kinds (name: switches):
#   native:       the machine's own dispatch (AVX-512 where it has it)
#   scalar:       ATEN_CPU_CAPABILITY=default, oneDNN and MKL limited to SSE4.x: no vector width above 4, no FMA
#   avx2:         ATEN_CPU_CAPABILITY=avx2, oneDNN and MKL limited to AVX2 (8 lanes, FMA): a pre-AVX-512 CPU
#   avx512-1t:    AVX-512 dispatch on one thread (a reduction split over threads rounds in another order)
# Exit status: non-zero when any kind failed; a summary line per kind at the end.
set -u
if [ $# -eq 0 ]; then
    # every test file comparing float32 model outputs with golden values or with another computation
    set -- tests/scoring/test_scoring.py tests/scoring/test_scoring_cache.py tests/scoring/test_scoring_chunks.py \
        tests/scoring/test_scoring_fastpath.py tests/scoring/test_scoring_masked.py tests/engine/test_scoring_onednn.py \
        tests/scoring/test_scoring_texts.py tests/biastest/test_biastest.py tests/engine/test_int8.py tests/unstereoeval/generate/test_generate_judge.py \
        tests/engine/test_llm_engine.py tests/sentiment/test_sentiment.py tests/sentiment/test_sentiment_debias.py tests/unstereoeval/corpus/test_corpus_delta.py \
        tests/fairpair/test_fairpair_metrics.py tests/unstereoeval/metrics/test_metrics.py tests/model_card/test_model_card.py \
        tests/model_card/test_model_card_compare.py tests/unstereoeval/generate/test_generate_judge_calibration.py tests/robustness/test_robustness.py \
        -k "not smollm2"
fi
kinds=(native scalar avx2 avx512-1t)
declare -A status
for kind in "${kinds[@]}"; do
    case $kind in
        native) envs=() ;;
        scalar) envs=(ATEN_CPU_CAPABILITY=default ONEDNN_MAX_CPU_ISA=SSE41 MKL_ENABLE_INSTRUCTIONS=SSE4_2) ;;
        avx2) envs=(ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2) ;;
        avx512-1t) envs=(ATEN_CPU_CAPABILITY=avx512 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1) ;;
    esac
    echo "=== CPU kind $kind: ${envs[*]:-(no switch)}"
    if env "${envs[@]}" python -m pytest -q -p no:cacheprovider "$@"; then
        status[$kind]=passed
    else
        status[$kind]=FAILED
    fi
done
rc=0
for kind in "${kinds[@]}"; do
    echo "cpu kind $kind: ${status[$kind]}"
    [ "${status[$kind]}" = passed ] || rc=1
done
exit $rc
