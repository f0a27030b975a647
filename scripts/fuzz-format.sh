#!/usr/bin/env bash
# Long mutation ("fuzz") run of the model-format readers: the MutationRobustnessTests with many more
# iterations than the regular test suite (which runs them at multiplier 1 in well under a minute).
#
# Usage:
#   scripts/fuzz-format.sh [MULTIPLIER] [SEED]
#
#   MULTIPLIER  how many times the regular iteration counts to run (default 50, about half an hour
#               on a 2-core machine); also EDGEVISION_FUZZ_ITERATIONS.
#   SEED        base seed, decimal or 0x-hex (default: a new random one, printed); also
#               EDGEVISION_FUZZ_SEED. The same seed and multiplier replay the same cases.
#
# Other environment variables:
#   EDGEVISION_FUZZ_VERBOSE=1        print every case before running it (to find the one that crashed)
#   EDGEVISION_FUZZ_HANG_SECONDS=N   a case running longer than N s aborts the run naming it (default 20)
#   EDGEVISION_MODELS=DIR            the models to fuzz (default ../shared/models)
#   SCRATCH=DIR                      SwiftPM scratch path (default .build-fuzz)
#
# Examples:
#   scripts/fuzz-format.sh                 # ~50x the regular run, random seed
#   scripts/fuzz-format.sh 200 0x1234      # longer, fixed seed
#   EDGEVISION_FUZZ_VERBOSE=1 scripts/fuzz-format.sh 1 0x1234 2>cases.log   # replay, logging each case
#
# Exit status: that of `swift test` (0 when no reader crashed, hung or threw anything but a
# ModelFormatError). A failure names the model, the seed, the case number and the mutation.
set -euo pipefail
cd "$(dirname "$0")/.."

multiplier="${1:-${EDGEVISION_FUZZ_ITERATIONS:-50}}"
if [ -n "${2:-}" ]; then
  seed="$2"
elif [ -n "${EDGEVISION_FUZZ_SEED:-}" ]; then
  seed="$EDGEVISION_FUZZ_SEED"
else
  seed="$(od -An -N8 -tu8 /dev/urandom | tr -d ' ')"
fi
scratch="${SCRATCH:-.build-fuzz}"

echo "fuzz-format: multiplier $multiplier, seed $seed, scratch path $scratch" >&2
export EDGEVISION_FUZZ_ITERATIONS="$multiplier"
export EDGEVISION_FUZZ_SEED="$seed"
exec swift test --scratch-path "$scratch" -c release --filter MutationRobustnessTests
