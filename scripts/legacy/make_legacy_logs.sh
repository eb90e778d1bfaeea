#!/usr/bin/env bash
# make_legacy_logs.sh - regenerate sample_logs/legacy/*.log: real verbose logs
# from older oneDNN releases (v2.0 ... v3.2), made on this machine.
#
# DEVELOPERS ONLY - NOT RUN IN CI.  It downloads ~50 MB per oneDNN version
# from PyPI (onednn-cpu-gomp + onednn-devel-cpu-gomp) and ~7 MB of Debian
# packages (libdnnl2, libdnnl-dev, ocl-icd-libopencl1), then compiles
# scripts/legacy/verbose_probe.cpp against each release with g++ and runs it
# with verbose level 2.  The resulting logs are committed; CI only reads them.
#
# Needs: bash, python3 + pip, g++, libgomp1; apt-get + dpkg-deb for the
# Debian build (root for `apt-get update`).  Everything is unpacked into one
# mktemp directory under /tmp that is removed on exit; nothing is installed
# into the system or into site-packages, and pip's cache is not used.
#
# Usage:   scripts/legacy/make_legacy_logs.sh
# Env:     PIP_VERSIONS="2021.1.1 2023.2.0"  override the PyPI versions
#          TIMESTAMP_VERSIONS="2021.4.0"     which of them also get a
#                                            *-timestamp.log run
#          SKIP_DEBIAN=1                     skip the Debian 2.6.3 build
#          OUT=dir                           output dir (default sample_logs/legacy)
#
# Logs are stdout+stderr of the probe (the probe prints two lines of its own,
# "verbose_probe: ...", around the library's lines - like a real program).
# Times, the ISA line and implementation names depend on the machine.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
OUT=${OUT:-$REPO/sample_logs/legacy}
PROBE_SRC=$HERE/verbose_probe.cpp
PYTHON=${PYTHON:-python3}

# PyPI version -> oneDNN release it carries (the log name uses the version
# read from the installed dnnl_version.h, not this table):
#   2021.1.1 -> 2.0   dnnl_verbose, hex md flags, old attr syntax
#   2021.2.0 -> 2.2   dnnl_verbose, hex flags, timestamps supported
#   2021.4.0 -> 2.4   dnnl_verbose, decimal flags, prim_template line
#   2022.0.2 -> 2.5   onednn_verbose (flat)
#   2022.2.1 -> 2.6   onednn_verbose, nthr in runtime line (2.6+)
#   2023.0.0 -> 3.0   onednn_verbose, v3 API
#   2023.2.0 -> 3.2   onednn_verbose, strides slot in memory descriptors
# Not in the default set (same families as their neighbours): 2021.3.0 -> 2.3,
# 2022.2.0 -> 2.6, 2023.1.0 -> 3.1.  PyPI has no 2.1 or 2.7 build of these.
read -r -a PIP_VERSIONS <<<"${PIP_VERSIONS:-2021.1.1 2021.2.0 2021.4.0 2022.0.2 2022.2.1 2023.0.0 2023.2.0}"
TIMESTAMP_VERSIONS=" ${TIMESTAMP_VERSIONS:-2021.2.0 2021.4.0 2023.2.0} "

WORK=$(mktemp -d /tmp/onednn-legacy.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$OUT"

log() { printf '[make_legacy_logs] %s\n' "$*" >&2; }

# "X.Y.Z" from an installed dnnl_version.h
onednn_version() {
    local h=$1/oneapi/dnnl/dnnl_version.h
    local maj min pat
    maj=$(sed -n 's/^#define DNNL_VERSION_MAJOR \([0-9]*\).*/\1/p' "$h")
    min=$(sed -n 's/^#define DNNL_VERSION_MINOR \([0-9]*\).*/\1/p' "$h")
    pat=$(sed -n 's/^#define DNNL_VERSION_PATCH \([0-9]*\).*/\1/p' "$h")
    echo "$maj.$min.$pat"
}

# build_and_run INCLUDE_DIR LIB_DIR LOG_BASENAME TIMESTAMP(0|1)
# Compiles the probe against one oneDNN and writes $OUT/<LOG_BASENAME>.log
# (and <LOG_BASENAME>-timestamp.log when TIMESTAMP=1).
build_and_run() {
    local inc=$1 lib=$2 name=$3 ts=$4
    local exe=$WORK/probe-$name
    g++ -std=c++11 -O1 -Wall -I"$inc" "$PROBE_SRC" -L"$lib" -ldnnl \
        -Wl,-rpath,"$lib" -o "$exe"
    run_probe "$exe" "$lib" "$OUT/$name.log" 0
    if [[ $ts == 1 ]]; then
        run_probe "$exe" "$lib" "$OUT/$name-timestamp.log" 1
    fi
}

# run_probe EXE LIB_DIR LOGFILE TIMESTAMP(0|1): clean environment, 2 threads.
run_probe() {
    local exe=$1 lib=$2 logfile=$3 ts=$4
    local -a vars=(PATH=/usr/bin:/bin LD_LIBRARY_PATH="$lib"
        OMP_NUM_THREADS=2 DNNL_VERBOSE=2 ONEDNN_VERBOSE=2)
    if [[ $ts == 1 ]]; then
        vars+=(DNNL_VERBOSE_TIMESTAMP=1 ONEDNN_VERBOSE_TIMESTAMP=1)
    fi
    log "run: env -i ${vars[*]} $(basename "$exe") > $(basename "$logfile")"
    env -i "${vars[@]}" "$exe" >"$logfile.tmp" 2>&1
    mv "$logfile.tmp" "$logfile"
}

do_pip_version() {
    local v=$1 prefix=$WORK/onednn-$v
    log "pip: onednn-cpu-gomp==$v"
    # --prefix, not --target: the wheels ship libdnnl.so and the headers as
    # wheel *data* files (<pkg>.data/data/{lib,include}); pip --target keeps
    # the headers but silently drops lib/.
    "$PYTHON" -m pip install --quiet --no-deps --no-cache-dir \
        --disable-pip-version-check --no-warn-script-location \
        --prefix "$prefix" \
        "onednn-cpu-gomp==$v" "onednn-devel-cpu-gomp==$v"
    local ver ts=0
    ver=$(onednn_version "$prefix/include")
    [[ $TIMESTAMP_VERSIONS == *" $v "* ]] && ts=1
    build_and_run "$prefix/include" "$prefix/lib" "onednn-$ver" "$ts"
    rm -rf "$prefix"  # ~150-250 MB each (the .so is copied, not symlinked)
}

do_debian() {
    local d=$WORK/debian root=$WORK/debian/root
    mkdir -p "$root"
    chmod 755 "$WORK"; chmod 777 "$d"  # lets apt's _apt user write here
    log "apt-get update + download libdnnl2 libdnnl-dev ocl-icd-libopencl1"
    apt-get update -qq
    # Debian's libdnnl2 is built with the OpenCL GPU runtime, hence libOpenCL.
    (cd "$d" && apt-get download -q libdnnl2 libdnnl-dev ocl-icd-libopencl1)
    local deb
    for deb in "$d"/*.deb; do dpkg-deb -x "$deb" "$root"; done
    local lib=$root/usr/lib/x86_64-linux-gnu ver
    ver=$(onednn_version "$root/usr/include")
    build_and_run "$root/usr/include" "$lib" "onednn-$ver-debian" 0
}

declare -a OK=() FAILED=()
for v in "${PIP_VERSIONS[@]}"; do
    # subshell outside any `if` so that set -e still applies inside it
    set +e; (set -e; do_pip_version "$v"); rc=$?; set -e
    if [[ $rc == 0 ]]; then OK+=("pypi:$v"); else FAILED+=("pypi:$v"); fi
done
if [[ ${SKIP_DEBIAN:-0} != 1 ]]; then
    set +e; (set -e; do_debian); rc=$?; set -e
    if [[ $rc == 0 ]]; then OK+=("debian"); else FAILED+=("debian"); fi
fi

log "ok: ${OK[*]:-none}"
log "failed: ${FAILED[*]:-none}"
ls -l "$OUT"/*.log >&2 2>/dev/null || true
[[ ${#FAILED[@]} == 0 ]]
