#!/usr/bin/env bash
# shellcheck disable=SC2054 # commas inside the linker's -Wl, options
# Builds the GPU bundle that scripts/gpu-check.sh runs on a machine with a GPU but without this
# machine's libraries (a lent device machine: CUDA's driver, nvcc, PyTorch and cuBLAS/cuDNN as
# pip packages, none of Debian's packages):
#   DIR/cdl-gpu, DIR/test_backend_ops, DIR/test_gpu_forward_at   (debug info stripped)
#   DIR/lib/      the shared libraries they need that a base system lacks (OpenBLAS, its
#                 gfortran/quadmath/gomp, cJSON), found through an RPATH of $ORIGIN/lib
#   DIR/MANIFEST  the commit, the build, every file's size and sha256, the ldd check
# and DIR.tar.xz, the same folder packed (about 7 MB against 49: OpenBLAS's kernels for every
# CPU make most of it), which is what travels: gpu-check.sh unpacks it where DIR is absent.
# Usage: scripts/gpu-bundle.sh [DIR]   (default build/gpu-bundle; JOBS=N for make -j, default 2)
#
# The build is `make GPU=1 DNNL=0` into its own directory (build/bundle-gpu) with two changes,
# both given on make's command line (the Makefile is unchanged):
# - ARCH=-march=x86-64-v3 (AVX2 and FMA): the default -march=native would tie the binaries to
#   this machine's CPU, and the other machine's is not known in advance;
# - LIB_LDLIBS, the whole link line: zstd, png, jpeg and zlib linked statically where Debian
#   ships the .a (else carried in lib/), OpenBLAS (the OpenMP build, as ./cdl uses) and cJSON
#   carried, the CUDA runtime static, and cuBLAS, cuBLASLt and cuDNN by soname only: no RPATH
#   to CUDA_DIR, so that on the other machine they come from LD_LIBRARY_PATH (gpu-check.sh
#   points it at the pip packages' folders).
# The check at the end fails the script when a binary needs a library that is neither in lib/,
# nor a base system library (glibc, libstdc++, libgcc_s), nor one of the CUDA libraries above.
set -euo pipefail

cd "$(dirname "$0")/.."
out=${1:-build/gpu-bundle}
jobs=${JOBS:-2}
cuda_dir=${CUDA_DIR:-/usr/local/cuda}
build=build/bundle-gpu
multiarch=/usr/lib/x86_64-linux-gnu
openblas_dir=$multiarch/openblas-openmp

fail() {
    echo "gpu-bundle: $*" >&2
    exit 1
}
[ -x "$cuda_dir/bin/nvcc" ] || fail "no nvcc under $cuda_dir (CUDA_DIR=): the GPU=1 build needs the CUDA toolkit"
[ -e "$openblas_dir/libopenblas.so.0" ] || fail "no $openblas_dir/libopenblas.so.0 (libopenblas0-openmp)"

# What a base system has; the CUDA libraries that gpu-check.sh finds on the other machine.
base_libs=" linux-vdso.so.1 ld-linux-x86-64.so.2 libc.so.6 libm.so.6 libdl.so.2 librt.so.1 \
libpthread.so.0 libstdc++.so.6 libgcc_s.so.1 "
cuda_libs=" libcublas.so.13 libcublasLt.so.13 libcudnn.so.9 "

link=()
for l in zstd png16 jpeg z; do
    if [ -e "$multiarch/lib$l.a" ]; then
        link+=(-Wl,-Bstatic "-l$l" -Wl,-Bdynamic)
    else
        link+=("-l$l") # carried in lib/ below
    fi
done
link+=(-L"$openblas_dir" -l:libopenblas.so.0 -lcjson -lm -fopenmp
    -L"$cuda_dir/lib64" -lcublas -lcublasLt -lcudnn -lcudart_static -ldl -lrt -lpthread -lstdc++
    # DT_RPATH, not RUNPATH: it also applies to what lib/'s libraries need (OpenBLAS's gfortran).
    # make turns $$ into $; the quotes keep the recipe's shell off $ORIGIN.
    -Wl,--disable-new-dtags "-Wl,-rpath,'\$\$ORIGIN/lib'")

bins=("$build/cdl-gpu" "$build/tests/test_backend_ops" "$build/tests/test_gpu_forward_at")
# The link line is not a prerequisite: relink every time (the objects stay).
rm -f "${bins[@]}"
make -j"$jobs" --no-print-directory GPU=1 DNNL=0 ARCH=-march=x86-64-v3 BUILD="$build" \
    CDL="$build/cdl-gpu" CUDA_DIR="$cuda_dir" "LIB_LDLIBS=${link[*]}" "${bins[@]}" >&2

rm -rf "$out"
mkdir -p "$out/lib"
for b in "${bins[@]}"; do
    objcopy --strip-debug "$b" "$out/${b##*/}"
done

# lib/: every library a binary or a carried library needs, beyond the base and CUDA ones,
# copied from where ldd finds it here (under its soname), until nothing new turns up.
needed_of() { readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
queue=("$out"/cdl-gpu "$out"/test_backend_ops "$out"/test_gpu_forward_at)
while [ ${#queue[@]} -gt 0 ]; do
    f=${queue[0]}
    queue=("${queue[@]:1}")
    for soname in $(needed_of "$f"); do
        case "$base_libs$cuda_libs" in *" $soname "*) continue ;; esac
        [ -e "$out/lib/$soname" ] && continue
        # OpenBLAS: the OpenMP build the link named, not the one Debian's alternatives pick
        if [ "$soname" = libopenblas.so.0 ]; then
            path=$openblas_dir/libopenblas.so.0
        else
            path=$(ldd "$f" | awk -v n="$soname" '$1 == n && $3 ~ /^\// { print $3; exit }')
        fi
        [ -n "$path" ] || fail "${f##*/} needs $soname, which ldd does not find here"
        cp -L "$path" "$out/lib/$soname"
        chmod 644 "$out/lib/$soname"
        queue+=("$out/lib/$soname")
    done
done

# The check: what each binary resolves to, with the CUDA libraries left for LD_LIBRARY_PATH.
check=$(mktemp)
trap 'rm -f "$check"' EXIT
bad=0
for f in "$out"/cdl-gpu "$out"/test_backend_ops "$out"/test_gpu_forward_at; do
    while read -r soname _ path _; do
        [ -n "$soname" ] || continue
        case "$base_libs$cuda_libs" in *" $soname "*) where=system ;; *) where=$path ;; esac
        case "$path" in "$(cd "$out" && pwd)"/lib/* | "$out"/lib/*) where=bundle ;; esac
        case "$where" in system | bundle) ;; *) bad=1 && where="NOT CARRIED: $path" ;; esac
        echo "${f#"$out"/}: $soname -> $where"
    done < <(ldd "$f" | awk '/=>/ { print $1, $2, $3 } !/=>/ && $1 ~ /^\// { n = $1; sub(/.*\//, "", n); print n, "=>", $1 }')
done >"$check"
rpath=$(readelf -d "$out/cdl-gpu" | sed -n 's/.*(RPATH).*\[\(.*\)\]/\1/p')
# shellcheck disable=SC2016 # the literal $ORIGIN
[ "$rpath" = '$ORIGIN/lib' ] || fail "cdl-gpu's RPATH is '$rpath', not \$ORIGIN/lib"

{
    echo "cdl GPU bundle (scripts/gpu-bundle.sh): $(git describe --always --dirty 2>/dev/null || echo unknown)"
    # shellcheck disable=SC1091
    echo "built $(date -u '+%F %H:%M UTC') on $(. /etc/os-release && echo "$PRETTY_NAME"), glibc $(ldd --version | sed -n '1s/.* //p')"
    echo "nvcc: $("$cuda_dir/bin/nvcc" --version | sed -n 's/.*release \([^,]*\),.*/\1/p'); ARCH=-march=x86-64-v3; link: ${link[*]}"
    echo "cdl: $("$out/cdl-gpu" --version 2>/dev/null || echo '(does not start here)')"
    echo
    echo "files:"
    (cd "$out" && find . -type f ! -name MANIFEST -printf '%P\n' | sort | while read -r p; do
        printf '  %10d  %s  %s\n' "$(stat -c %s "$p")" "$(sha256sum "$p" | cut -c1-16)" "$p"
    done)
    echo
    echo "ldd (system: base libraries, and cuBLAS/cuBLASLt/cuDNN, which gpu-check.sh finds in pip's nvidia packages):"
    sed 's/^/  /' "$check"
} >"$out/MANIFEST"
[ $bad = 0 ] || { grep 'NOT CARRIED' "$check" >&2; fail "a library is neither carried nor a base one"; }
rm -f "$out.tar.xz"
XZ_OPT=-T"$jobs" tar -C "$(dirname "$out")" -cJf "$out.tar.xz" "$(basename "$out")"
echo "gpu-bundle: $out.tar.xz: $(du -h "$out.tar.xz" | cut -f1); $out: $(du -sh "$out" | cut -f1) ($(find "$out" -type f | wc -l) files); $(grep -c bundle "$check") bundled and $(grep -c system "$check") system references; MANIFEST lists them"
