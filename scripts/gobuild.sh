#!/usr/bin/env bash
# gobuild.sh: the Makefile's builds and installs, never silent for long.
#
#   gobuild.sh build PKG OUT [BUILD FLAGS...]   go build PKG into OUT
#   gobuild.sh install NAME WHY PKG@VERSION     go install into $GOBIN
#
# Before a step starts it says what it compiles and why, with a rough time
# on 2 cores; while it runs it prints a line at least every
# S3ONCE_BUILD_HEARTBEAT seconds (30 by default), naming the package still
# compiling (go build reports a package only once it is done, so one large
# package, or the link, would otherwise be minutes of silence). Compiler
# errors pass through as they are, and the exit status is go's.
set -uo pipefail

GO=${GO:-go}
beat=${S3ONCE_BUILD_HEARTBEAT:-30}
module=github.com/s3once/s3once/
tmp=$(mktemp -d)
hb=
trap '[ -n "$hb" ] && kill "$hb" 2>/dev/null; rm -rf "$tmp"' EXIT
: >"$tmp/stale"
: >"$tmp/done"
start=$SECONDS

elapsed() {
	local s=$((SECONDS - start))
	printf '%dm%02ds' $((s / 60)) $((s % 60))
}

# short drops the module's own path from a package path.
short() { sed "s|^$module|s3once/|"; }

# heartbeat WHAT prints, every $beat seconds, what is still compiling: the
# first stale packages not reported done (in dependency order, so the one
# compiling or about to), or the link once every package is done.
heartbeat() {
	local what=$1 left n now
	while sleep "$beat"; do
		n=$(grep -c . "$tmp/done")
		if [ -e "$tmp/listing" ]; then
			echo "  still finding what $what needs compiled ($(elapsed); an empty build cache takes a minute or two)"
		elif [ -s "$tmp/stale" ]; then
			left=$(grep -vxFf "$tmp/done" "$tmp/stale" | short)
			if [ -z "$left" ]; then
				now="linking"
			else
				now="at $(head -n 1 <<<"$left")"
				local more=$(($(grep -c . <<<"$left") - 1))
				[ "$more" -gt 0 ] && now="$now, $more more to go"
			fi
			echo "  still building $what: $now ($n of $(grep -c . "$tmp/stale") packages done, $(elapsed))"
		else
			echo "  still installing $what: $n packages compiled ($(elapsed))"
		fi
	done
}

# progress reads go's -v output: package paths are counted (and shown as a
# count, every 100 packages); anything else (compiler errors) is printed.
progress() {
	local n=$1 i=0 line
	while IFS= read -r line; do
		if [[ $line =~ ^[A-Za-z0-9_.~/-]+$ ]]; then
			echo "$line" >>"$tmp/done"
			i=$((i + 1))
			if [ "$n" -gt 50 ] && [ $((i % 100)) -eq 0 ]; then
				echo "  compiled $i of $n packages ($(elapsed))"
			fi
			continue
		fi
		printf '%s\n' "$line"
	done
}

# names lists the large libraries among the stale packages, so the notice
# says what the time goes to.
names() {
	local found=() pat name
	for pat in "apache/beam/=Apache Beam's Go SDK" "apache/iceberg-go=iceberg-go" "apache/arrow-go=Apache Arrow" \
		"modernc.org/sqlite=SQLite (in Go)" "parquet-go/=parquet-go" "aws-sdk-go-v2=the AWS SDK" "google.golang.org/grpc=gRPC"; do
		name=${pat#*=}
		grep -q "${pat%%=*}" "$tmp/stale" && found+=("$name")
	done
	local IFS=,
	echo "${found[*]}" | sed 's/,/, /g'
}

case ${1:-} in
build)
	pkg=$2 out=$3
	shift 3
	mkdir -p "$(dirname "$out")"
	# Listing what is stale hashes every source file, which with an empty
	# build cache is minutes of its own on a busy machine: the heartbeat
	# runs through it too.
	: >"$tmp/listing"
	heartbeat "$pkg" &
	hb=$!
	"$GO" list "$@" -deps -f '{{if .Stale}}{{.ImportPath}}{{end}}' "$pkg" >"$tmp/stale" || exit
	rm -f "$tmp/listing"
	n=$(grep -c . "$tmp/stale")
	# A main package always lists as stale (it is never installed): alone,
	# with its binary in place, it is a relink of a second or two.
	if [ "$n" -gt 1 ] || [ ! -e "$out" ]; then
		libs=$(names)
		# About 140 packages a minute on 2 free cores, with SQLite's
		# one very large package a few minutes of its own.
		mins=$(((n + 139) / 140))
		grep -q modernc.org/sqlite/lib "$tmp/stale" && mins=$((mins + 3))
		unit=minutes
		[ "$mins" -eq 1 ] && unit=minute
		echo "building $pkg: $n packages to compile${libs:+ ($libs among them)}; about $mins $unit on 2 free cores (several times that on a busy machine), seconds once built"
	fi
	"$GO" build "$@" -v -o "$out" "$pkg" 2>&1 | progress "$n"
	rc=${PIPESTATUS[0]}
	[ "$n" -gt 50 ] && [ "$rc" -eq 0 ] && echo "built $out in $(elapsed)"
	exit "$rc"
	;;
install)
	name=$2 why=$3 target=$4
	echo "installing $name ($why): go install $target into ${GOBIN:-\$GOBIN}; the first time downloads and compiles it, a few minutes on 2 cores"
	heartbeat "$name" &
	hb=$!
	"$GO" install -v "$target" 2>&1 | progress 0
	rc=${PIPESTATUS[0]}
	[ "$rc" -eq 0 ] && echo "installed $name in $(elapsed)"
	exit "$rc"
	;;
*)
	echo "usage: gobuild.sh build PKG OUT [FLAGS...] | gobuild.sh install NAME WHY PKG@VERSION" >&2
	exit 2
	;;
esac
