#!/usr/bin/env bash
# silentgap.sh: a new user's first runs, timed line by line.
#
# Clones the repository's HEAD into a temporary folder and, with an empty
# build cache (the module cache is kept: downloading is not what this
# checks), runs `make run`, `make run FORMAT=parquet` and
# `make run FORMAT=iceberg` there, one after the other. It fails if any run
# fails or if any of them is silent for longer than MAX_GAP seconds (60 by
# default) between two lines of output. It prints each run's longest gap
# and time. make soak runs it; it takes 20 to 40 minutes on 2 cores.
set -uo pipefail

max=${MAX_GAP:-60}
repo=$(git rev-parse --show-toplevel) || exit
work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
git clone -q "$repo" "$work/clone" || exit
export GOCACHE="$work/gocache"

# watch copies its input, prefixed with the seconds since the start, and
# exits 1 if two lines (or the start and the first line, or the last line
# and the end) lie more than $max seconds apart.
watch() {
	local name=$1 start=$EPOCHREALTIME last=$EPOCHREALTIME line gap worst=0 at=""
	while IFS= read -r line; do
		gap=$(awk -v a="$last" -v b="$EPOCHREALTIME" 'BEGIN { printf "%d", b - a }')
		if [ "$gap" -gt "$worst" ]; then worst=$gap at=$line; fi
		last=$EPOCHREALTIME
		printf '%6.0fs  %s\n' "$(awk -v a="$start" -v b="$last" 'BEGIN { print b - a }')" "$line"
	done
	gap=$(awk -v a="$last" -v b="$EPOCHREALTIME" 'BEGIN { printf "%d", b - a }')
	if [ "$gap" -gt "$worst" ]; then worst=$gap at="(the end)"; fi
	local total
	total=$(awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%d", b - a }')
	echo "silentgap: $name took ${total}s; longest silence ${worst}s, before: $at"
	[ "$worst" -le "$max" ] || { echo "silentgap: FAIL: $name was silent for ${worst}s (limit ${max}s)"; return 1; }
}

status=0
for format in jsonl parquet iceberg; do
	name="make run FORMAT=$format"
	(
		cd "$work/clone" && make run FORMAT="$format" 2>&1
		echo $? >"$work/rc"
	) | watch "$name" || status=1
	rc=$(cat "$work/rc")
	[ "$rc" = 0 ] || { echo "silentgap: FAIL: $name exited with $rc"; status=1; }
done
exit $status
