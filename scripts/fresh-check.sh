#!/usr/bin/env bash
# Proves that `make demo` and `make test` pass the first time on a fresh Debian 12: builds a
# minimal bookworm tree with debootstrap, copies in a clean export of the repository
# (`git archive`), installs only `make` in it, and runs `make demo` then `make test` as root
# in a chroot with CI=true, printing how long each took and its last lines.
#
# Usage (as root): scripts/fresh-check.sh [--reuse] [--ref REF] [DIR]
#   DIR      where the trees go (default /var/tmp/cdl-fresh): DIR/base is the pristine
#            debootstrap tree, DIR/root the copy each run works in (made afresh every run),
#            DIR/logs the full output of each step.
#   --reuse  reuse DIR/base from an earlier run instead of running debootstrap again (saves
#            its download); the run still starts from a copy with nothing installed.
#   --ref    the commit to export (default HEAD; uncommitted changes are not part of it).
# The Debian mirror is the first bookworm one in this machine's apt sources (MIRROR=URL
# overrides it). The chroot shares this machine's network: its resolv.conf and any local CA
# certificates (/usr/local/share/ca-certificates) are copied in, as a site's install would.
set -euo pipefail
# (The body is one function, read whole before it runs: editing or checking out this file
# while it runs cannot change what runs.)

die() {
    echo "fresh-check: $*" >&2
    exit 2
}

main() {
    dir=/var/tmp/cdl-fresh
    reuse=0
    ref=HEAD
    while [ $# -gt 0 ]; do
        case "$1" in
            --reuse) reuse=1 ;;
            --ref) ref=${2:?--ref needs a commit}; shift ;;
            -h | --help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
            -*) die "unknown option $1 (see --help)" ;;
            *) dir=$1 ;;
        esac
        shift
    done
    [ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap and chroot)"
    all_start=$SECONDS
    repo=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
    git -C "$repo" rev-parse --verify -q "$ref^{commit}" >/dev/null || die "no commit $ref"
    mkdir -p "$dir/logs"
    dir=$(cd "$dir" && pwd)
    base=$dir/base
    root=$dir/root
    export DEBIAN_FRONTEND=noninteractive

    # The first bookworm (not -security, not -updates) mirror in this machine's apt sources:
    # one-line `deb URL bookworm ...` entries, then deb822 paragraphs whose Suites name bookworm.
    host_mirror() {
        {
            cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
                awk '$1 == "deb" { for (i = 2; i < NF; i++) if ($i ~ /^[a-z]+:\/\//) {
                         if ($(i + 1) == "bookworm") print $i; break } }'
            cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
                awk 'BEGIN { RS = "" } /(^|\n)Enabled:[ \t]*no/ { next }
                     /(^|\n)Suites:[^\n]*[ \t]bookworm([ \t\n]|$)/ {
                         if (match($0, /URIs:[ \t]*[^ \t\n]+/)) {
                             s = substr($0, RSTART, RLENGTH); sub(/URIs:[ \t]*/, "", s); print s } }'
        } | head -n 1
    }

    # Unmounts everything below the run tree; refuses to delete a tree something is mounted in.
    mounted_below() { awk -v p="$1/" 'index($2 "/", p) == 1 { print $2 }' /proc/mounts; }
    cleanup() {
        local m
        for m in $(mounted_below "$root" | sort -r); do
            umount -l "$m" 2>/dev/null || true
        done
    }
    trap cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM

    if [ "$reuse" = 1 ]; then
        [ -x "$base/bin/sh" ] || die "--reuse: no debootstrap tree in $base (run without --reuse first)"
        echo "fresh-check: reusing $base"
    else
        command -v debootstrap >/dev/null || {
            echo "fresh-check: installing debootstrap"
            apt-get update -qq && apt-get install -y -qq --no-install-recommends debootstrap
        }
        mirror=${MIRROR:-$(host_mirror)}
        [ -n "$mirror" ] || die "no bookworm mirror in /etc/apt/sources.list*; set MIRROR=URL"
        [ -z "$(mounted_below "$base")" ] || die "something is mounted below $base"
        rm -rf "$base"
        echo "fresh-check: debootstrap --variant=minbase bookworm from $mirror (log: $dir/logs/debootstrap.log)"
        start=$SECONDS
        if ! debootstrap --variant=minbase bookworm "$base" "$mirror" >"$dir/logs/debootstrap.log" 2>&1; then
            tail -n 20 "$dir/logs/debootstrap.log" >&2
            die "debootstrap failed (full log: $dir/logs/debootstrap.log)"
        fi
        echo "fresh-check: debootstrap took $((SECONDS - start)) s"
    fi

    [ -z "$(mounted_below "$root")" ] || die "something is still mounted below $root"
    rm -rf "$root"
    cp -a "$base" "$root"
    mkdir -p "$root/root/cdl"
    git -C "$repo" archive "$ref" | tar -x -C "$root/root/cdl"
    cp -L /etc/resolv.conf "$root/etc/resolv.conf"
    if [ -d /usr/local/share/ca-certificates ]; then
        cp -a /usr/local/share/ca-certificates/. "$root/usr/local/share/ca-certificates/"
    fi
    mount -t proc proc "$root/proc"
    mount -t sysfs sysfs "$root/sys"
    mount --rbind /dev "$root/dev"
    mount --make-rslave "$root/dev"

    # in_root NAME COMMAND: runs COMMAND (bash) in the chroot's checkout with a clean
    # environment, its output in DIR/logs/NAME.log; prints the time and the last lines.
    in_root() {
        local name=$1 log=$dir/logs/$1.log start=$SECONDS rc=0
        echo "fresh-check: $name (log: $log)"
        chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb CI=true \
            DEBIAN_FRONTEND=noninteractive PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
            /bin/bash -c "cd /root/cdl && $2" >"$log" 2>&1 || rc=$?
        echo "fresh-check: $name: exit $rc after $((SECONDS - start)) s; last lines:"
        tail -n "${3:-5}" "$log" | sed 's/^/    /'
        if [ "$rc" != 0 ]; then
            echo "fresh-check: $name failed; failing checks in its log:"
            grep -E '^(FAIL |not ok )' "$log" | sed 's/^/    /' || true
        fi
        return "$rc"
    }

    # The one thing a user installs by hand before `make demo` is make itself.
    in_root "install make" "apt-get update -qq && apt-get install -y -qq --no-install-recommends make" 2
    in_root "make demo" "make demo" 8
    in_root "make test" "make test" 5
    echo "fresh-check: make demo and make test passed on a fresh Debian 12 ($(git -C "$repo" rev-parse --short "$ref")) in $((SECONDS - all_start)) s"
}

main "$@"
exit
